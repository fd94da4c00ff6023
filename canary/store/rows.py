"""What the store hands out and takes in: plain frozen dataclasses, never ORM objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypedDict


class UnknownExclusion(LookupError):
    def __init__(self, exclusion_id: int) -> None:
        super().__init__(f"no active runtime exclusion with id {exclusion_id}")
        self.exclusion_id = exclusion_id


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
        super().__init__(f"{model} {tag}: the slot {slot.isoformat()} was already counted")
        self.model = model
        self.tag = tag
        self.slot = slot


# Inputs. The core defines its own equivalent; anything with these attributes fits.


class DriftChangeLike(Protocol):
    @property
    def tag(self) -> str | None: ...
    @property
    def field(self) -> str: ...
    @property
    def old(self) -> Any: ...
    @property
    def new(self) -> Any: ...
    @property
    def alert(self) -> bool: ...


@dataclass(frozen=True)
class DriftChange:
    tag: str | None
    field: str
    old: Any
    new: Any
    alert: bool = False
    reason: str | None = None


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
    checksums: dict[str, Any]
    cost_usd: float | None
    skipped: tuple[SkippedEndpoint, ...]
    detail: dict[str, Any]
    heartbeat_at: datetime | None = None  # its claimer's last sign of life


@dataclass(frozen=True)
class ProbeRow:
    id: int
    round_id: int
    model: str
    tag: str
    contract: str
    language: str | None
    attempt: int
    transport: str
    status: int | None
    error: str | None
    served_by: str | None
    attribution_ok: bool
    ttft_s: float | None
    reasoning_s: float | None
    total_s: float | None
    finish_reason: str | None
    native_finish_reason: str | None
    sample: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    checksum: str
    at: datetime
    ttft_censored: bool = False  # a stall: ttft_s is the first-token timeout, a lower bound


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
class HistoryRow:
    """One endpoint's verdict in one round, with its contract results."""

    round_id: int
    at: datetime  # the round's scheduled time
    model: str
    tag: str
    verdict: str
    language_anomaly_in: str | None
    results: tuple[ContractResultRow, ...] = ()
    round_status: str = "finished"  # running | finished | abandoned: only a finished one counts
    extra: bool = False  # an extra round (`canary round --now`): judged, but it decides nothing


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
    evidence: tuple[int, ...]
    policy_version: str
    round_id: int | None
    causes: tuple[str, ...] = ()  # the contracts that caused it ("all": from before causes)
    withheld_at: datetime | None = None  # held back from the published list by the floor


@dataclass(frozen=True)
class ExclusionRow:
    id: int
    model: str
    tag: str
    reason: str
    actor: str
    created_at: datetime
    until: datetime | None
    removed_at: datetime | None
    removed_by: str | None
    remove_reason: str | None


@dataclass(frozen=True)
class AuditRow:
    id: int
    at: datetime
    actor: str
    event: str
    model: str | None
    tag: str | None
    detail: dict[str, Any]
    evidence: tuple[int, ...]
    policy_version: str | None
    round_id: int | None
    notified_at: datetime | None
    notify_attempts: int
    next_attempt_at: datetime | None


@dataclass(frozen=True)
class DriftRow:
    id: int
    round_id: int | None
    model: str
    tag: str | None
    at: datetime
    field: str
    old: Any
    new: Any
    alert: bool
    reason: str | None = None


@dataclass(frozen=True)
class LeaseRow:
    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class SnapshotRow:
    round_id: int | None
    model: str
    tag: str
    at: datetime
    meta: dict[str, Any] = field(default_factory=dict)
