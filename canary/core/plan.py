"""Which probes a round sends to one endpoint, and in which language. Pure."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from canary.core.model import Contract, Endpoint, EndpointState


@dataclass(frozen=True)
class PlannedProbe:
    model: str
    tag: str
    contract: Contract
    language: str
    attempt: int = 1


def slot_of(now: datetime, interval_minutes: float) -> datetime:
    """The scheduled time of the round that `now` belongs to: aligned, the same on every replica."""
    step = interval_minutes * 60
    return datetime.fromtimestamp((now.timestamp() // step) * step, tz=UTC)


def round_index(epoch_seconds: float, interval_minutes: float) -> int:
    """The slot number of a round: the same for every replica that runs it."""
    return int(epoch_seconds // (interval_minutes * 60))


def pick_language(tag: str, index: int, languages: Sequence[str], next_language: str | None) -> str:
    """Rotate through the languages, offset per endpoint; repeat a language after an anomaly."""
    if next_language is not None and next_language in languages:
        return next_language
    offset = zlib.crc32(tag.encode("utf-8"))
    return languages[(index + offset) % len(languages)]


def plan_endpoint(
    endpoint: Endpoint,
    state: EndpointState | None,
    *,
    index: int,
    languages: Sequence[str],
    ttft_samples: int,
    applicable: Callable[[Contract, Endpoint], bool],
) -> tuple[PlannedProbe, ...]:
    language = pick_language(
        endpoint.tag, index, languages, state.next_language if state is not None else None
    )
    probes = [
        PlannedProbe(endpoint.model, endpoint.tag, Contract.ttft, language, attempt)
        for attempt in range(1, ttft_samples + 1)
    ]
    probes.append(PlannedProbe(endpoint.model, endpoint.tag, Contract.refusal, language))
    probes.append(PlannedProbe(endpoint.model, endpoint.tag, Contract.language, language))
    probes.extend(
        PlannedProbe(endpoint.model, endpoint.tag, contract, language)
        for contract in (Contract.schema, Contract.tools)
        if applicable(contract, endpoint)
    )
    return tuple(probes)
