"""Which probes a round sends to one endpoint, and in which language. Pure.

The language rotates per endpoint (:func:`pick_language`); after an anomaly the next round
repeats its language (:func:`repeat_language`), for at most ``streak_max_age_hours`` since it
became pending: after a longer outage (no round decided in between) the rotation resumes.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from canary.core.model import Contract, Endpoint, EndpointState


@dataclass(frozen=True)
class PlannedProbe:
    model: str
    tag: str
    contract: Contract
    language: str
    attempt: int = 1


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def slot_length(interval_minutes: float) -> timedelta:
    """A slot's length, to the microsecond (slots are counted in whole microseconds, so that a
    slot's start, computed again, falls in that slot and not in the one before it)."""
    return timedelta(microseconds=round(interval_minutes * 60_000_000))


def round_index(at: datetime, interval_minutes: float) -> int:
    """The number of the slot ``at`` falls in, counted from the Unix epoch: the same for every
    replica that runs its round."""
    return (at - _EPOCH) // slot_length(interval_minutes)


def slot_of(now: datetime, interval_minutes: float) -> datetime:
    """The scheduled time of the round that `now` belongs to: aligned, the same on every replica."""
    return _EPOCH + round_index(now, interval_minutes) * slot_length(interval_minutes)


def next_slot(after: datetime, interval_minutes: float) -> datetime:
    """The start of the first slot that begins strictly after ``after``."""
    return slot_of(after, interval_minutes) + slot_length(interval_minutes)


def overrun_slot(ran: datetime, now: datetime, interval_minutes: float) -> datetime | None:
    """The slot to run at once when a round of slot ``ran`` (and the work after it) ends at
    ``now``: the current slot if it began meanwhile, else ``None``.

    The scheduler runs one round at a time: a slot that starts while a round runs is skipped
    there. Run late, it still gets its round: on one runner, rounds longer than the interval go
    on back to back instead of every other slot; among replicas, one busy at a slot's start joins
    it as soon as it is free instead of leaving it to the others. Slots that began and ended
    while the round ran are gone: only the current one is run, so no slot ever gets two rounds
    from one runner."""
    current = slot_of(now, interval_minutes)
    return current if current > ran else None


def pick_language(tag: str, index: int, languages: Sequence[str], next_language: str | None) -> str:
    """Rotate through the languages, offset per endpoint; repeat a language after an anomaly."""
    if next_language is not None and next_language in languages:
        return next_language
    offset = zlib.crc32(tag.encode("utf-8"))
    return languages[(index + offset) % len(languages)]


def repeat_language(
    state: EndpointState | None, now: datetime | None, max_age: timedelta | None
) -> str | None:
    """The pending language this round must repeat: None when there is none, or when (given
    ``now`` and ``max_age``) it has been pending longer than the max age."""
    if state is None or state.next_language is None:
        return None
    if now is not None and max_age is not None:
        since = state.next_language_since
        if since is None or now - since > max_age:
            return None
    return state.next_language


def plan_endpoint(
    endpoint: Endpoint,
    state: EndpointState | None,
    *,
    index: int,
    languages: Sequence[str],
    ttft_samples: int,
    applicable: Callable[[Contract, Endpoint], bool],
    now: datetime | None = None,
    max_age: timedelta | None = None,
) -> tuple[PlannedProbe, ...]:
    """The probes of one endpoint this round. ``now`` and ``max_age`` (the policy's
    ``streak_max_age``): a pending language older than that is not repeated."""
    language = pick_language(endpoint.tag, index, languages, repeat_language(state, now, max_age))
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


# The probes whose answers judge each contract: language and hygiene judge every prose answer,
# so a focused check of hygiene sends the ttft samples and the language probe.
PROBES_FOR: dict[Contract, frozenset[Contract]] = {
    **{c: frozenset({c}) for c in Contract},
    Contract.hygiene: frozenset({Contract.ttft, Contract.language}),
}


def focus_plan(
    plan: Sequence[PlannedProbe], contracts: Collection[Contract]
) -> tuple[PlannedProbe, ...]:
    """A focused check's probes: those of the round's plan that judge ``contracts``."""
    wanted = frozenset().union(*(PROBES_FOR[c] for c in contracts))
    return tuple(p for p in plan if p.contract in wanted)
