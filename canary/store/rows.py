"""What the store hands out and takes in: plain frozen dataclasses, never ORM objects.

Here are the rows the published list and ``canary status`` read (rounds, contract results,
quarantines, layers, latency figures) and the store's errors; the others are in
:mod:`canary.store.log_rows`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from pydantic import JsonValue
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.floor import FloorRecord, Publication, publish
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer, Look, iso_utc
from canary.core.profiles import Measured

# A model's endpoint listing as a snapshot keeps it: each endpoint's published fields by tag.
Snapshot = dict[str, dict[str, JsonValue]]


class UnknownExclusion(LookupError):
    def __init__(self, exclusion_id: int, layer: Layer = Layer.runtime) -> None:
        what = "maintenance window" if layer is Layer.maintenance else "runtime exclusion"
        super().__init__(f"no active {what} with id {exclusion_id}")
        self.exclusion_id = exclusion_id


class WindowInForce(ValueError):
    """A maintenance window for the same model and provider is in force already."""


class FloorRefused(ValueError):
    """An operator's exclusion would lower a model's usable endpoints below its capacity floor
    (or the model was never listed); the message names the floor and the usable count."""

    def __init__(self, model: str, tag: str, message: str) -> None:
        super().__init__(message)
        self.model = model
        self.tag = tag


class NoActiveQuarantine(LookupError):
    def __init__(self, model: str, tag: str) -> None:
        super().__init__(f"{model} has no active quarantine of provider {tag!r}")
        self.model = model
        self.tag = tag


class UnknownRound(LookupError):
    def __init__(self, round_id: int) -> None:
        super().__init__(f"no round with id {round_id}")
        self.round_id = round_id


class SlotAlreadyCounted(RuntimeError):
    """A decision would count a second round of one slot for an endpoint: the state was last
    written by the decision of another round of that same slot."""

    def __init__(self, model: str, tag: str, slot: datetime) -> None:
        super().__init__(f"{model} {tag}: the slot {iso_utc(slot)} was already counted")
        self.model = model
        self.tag = tag
        self.slot = slot


class SkippedEndpoint(TypedDict):
    """An endpoint a round did not probe (the budget), as ``rounds.skipped`` keeps it."""

    provider: str
    reason: str


# Reads.


@dataclass(frozen=True)
class RoundRow:
    id: int
    model: str
    scheduled_at: datetime
    started_at: datetime
    finished_at: datetime | None
    status: str
    policy_version: str
    runner_id: str
    checksums: dict[str, str]  # of the probe definitions, by file
    cost_usd: float | None
    skipped: tuple[SkippedEndpoint, ...]
    detail: dict[str, JsonValue]
    heartbeat_at: datetime | None = None  # its claimer's last sign of life


@dataclass(frozen=True)
class ContractResultRow:
    round_id: int
    model: str
    tag: str
    contract: str
    result: str
    detail: str
    figure: float | None
    reason: str | None
    sample: str
    language: str | None
    language_anomaly: bool
    at: datetime | None = None  # the round's scheduled time


@dataclass(frozen=True)
class QuarantineRow:
    id: int
    model: str
    tag: str
    started_at: datetime
    until: datetime
    released_at: datetime | None
    release_why: str | None
    step: int
    reason: str
    evidence: tuple[Look, ...]  # the looks it rests on
    policy_version: str
    round_id: int | None
    causes: tuple[str, ...] = ()  # the contracts that caused it ("all": from before causes)
    withheld_at: datetime | None = None  # held back from the published list by the floor


@dataclass(frozen=True)
class FloorOf:
    """What one model's floor is held with: its built-in entries, its floor, its controls."""

    model: str
    builtin: tuple[Exclusion, ...]
    floor: int
    controls: Controls = NO_CONTROLS


@dataclass(frozen=True)
class ModelLayers:
    """What a model's publication is computed from, read at one moment."""

    listing: tuple[Listed, ...] | None
    runtime: tuple[Exclusion, ...]
    quarantines: tuple[Exclusion, ...]
    record: FloorRecord
    # each endpoint's 24 h figures a task profile is held to (read only for the models a
    # profile covers)
    measured: Mapping[str, Measured] = field(default_factory=dict)

    def publish(
        self,
        model: str,
        builtin: Sequence[Exclusion],
        floor: int,
        now: datetime,
        *,
        controls: Controls = NO_CONTROLS,
    ) -> Publication:
        return publish(
            model,
            self.listing,
            builtin,
            self.runtime,
            self.quarantines,
            floor=floor,
            now=now,
            controls=controls,
        )


class NewDocument(NamedTuple):
    """A published document to record in the history: its variant's key, ETag and body."""

    model: str
    variant: str
    etag: str
    body: JsonValue


class ResultMark(NamedTuple):
    """One contract's outcome in an endpoint's latest judged round, as operators see it."""

    result: str
    detail: str
    round_id: int


class WindowFigures(NamedTuple):
    """One endpoint's time-to-first-token figures over one window ending ``at``."""

    at: datetime
    n: int
    p50: float | None
    p95: float | None
    p99: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99, "n": self.n}
