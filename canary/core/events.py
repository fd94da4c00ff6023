"""What the rules decided, one frozen class per kind of event. Each becomes an audit row (its
fields, in order, are the row's ``detail`` JSON) and maybe a notification; :func:`event_of` reads
a row back, older rows included (a field a row lacks takes its default).

- :func:`explanation` — the text that explains an event to a person (page, CLI, notifier);
- :func:`alerts` — whether an event is sent to operators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, ClassVar, get_args

from pydantic import BeforeValidator, JsonValue, TypeAdapter

from canary.core.model import Contract, EventKind, Look, Result, Verdict, iso_utc, looks_of

Looks = Annotated[tuple[Look, ...], BeforeValidator(looks_of)]
# a key written only when set (an operator's release, a forced action, a once-a-day alert)
OPTIONAL = {"optional": True}


@dataclass(frozen=True, kw_only=True)
class EventBase:
    kind: ClassVar[EventKind]
    model: str
    tag: str | None = None
    evidence: Looks = ()  # the looks it rests on

    @property
    def detail(self) -> dict[str, JsonValue]:
        """The audit row's ``detail``: every field but the model, the tag and the evidence."""
        return {
            f.name: _json(getattr(self, f.name))
            for f in fields(self)
            if f.name not in ("model", "tag", "evidence")
            and not (f.metadata.get("optional") and getattr(self, f.name) is None)
        }


def _json(value: object) -> JsonValue:
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, Look):
        return value.as_json()
    if isinstance(value, StrEnum):
        return str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON")


@dataclass(frozen=True)
class ResultLine:
    contract: Contract
    result: Result
    detail: str
    reason: str | None = None
    figure: float | None = None
    language: str | None = None


@dataclass(frozen=True, kw_only=True)
class VerdictEvent(EventBase):
    kind = EventKind.verdict
    verdict: Verdict = Verdict.inconclusive
    results: tuple[ResultLine, ...] = ()
    language_anomaly_in: str | None = None


@dataclass(frozen=True, kw_only=True)
class QuarantineStarted(EventBase):
    kind = EventKind.quarantine
    since: datetime | None = None
    until: datetime | None = None
    step: int = 0
    days: float = 0.0
    reason: str = ""
    causes: tuple[str, ...] = ()
    evidence_by_cause: dict[str, Looks] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Released(EventBase):
    kind = EventKind.release
    why: str = ""  # expired | recovered | manual
    since: datetime | None = None
    until: datetime | None = None
    at: datetime | None = None
    reason: str | None = field(default=None, metadata=OPTIONAL)  # an operator's release
    actor: str | None = field(default=None, metadata=OPTIONAL)
    quarantine_id: int | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class WouldQuarantine(EventBase):
    kind = EventKind.would_quarantine
    reason: str = ""
    causes: tuple[str, ...] = ()
    failing_rounds: int = 0
    floor_would_hold: bool = False
    usable: tuple[str, ...] = ()
    floor: int = 0
    evidence_by_cause: dict[str, Looks] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class FloorHeld(EventBase):
    """A quarantine not started: it would leave the published list below the floor."""

    kind = EventKind.floor_held
    kept: str = ""
    why: str = ""
    floor: int = 0
    usable: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    reason: str = ""
    causes: tuple[str, ...] = ()
    failing_rounds: int = 0
    evidence_by_cause: dict[str, Looks] = field(default_factory=dict)
    alert: bool = True


@dataclass(frozen=True)
class Action:
    """An operator's exclusion that a floor row follows from."""

    event: str
    exclusion_id: int | None
    tag: str
    force: bool
    actor: str


@dataclass(frozen=True, kw_only=True)
class QuarantineWithheld(EventBase):
    """A quarantine in force left off the published list to keep the floor (kind floor_held)."""

    kind = EventKind.floor_held
    withheld: str = ""
    quarantine_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    floor: int = 0
    usable: int = 0
    why: str = ""
    alert: bool = True
    action: Action | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class ProbeWeak(EventBase):
    kind = EventKind.probe_weak
    contract: Contract = Contract.refusal
    why: str = ""
    controls: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ModelWide(EventBase):
    kind = EventKind.model_wide
    contract: Contract = Contract.refusal
    failing: int = 0
    total: int = 0
    tags: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class OperatorAlert(EventBase):
    """Answers that are our problem (auth/config, bad request), never a provider's."""

    kind = EventKind.operator_alert
    transports: tuple[str, ...] = ()
    count: int = 0
    status: int | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ListingAlert(EventBase):
    """The endpoints list failed for one of our problems (kind operator_alert)."""

    kind = EventKind.operator_alert
    listing: str = ""


@dataclass(frozen=True, kw_only=True)
class Drifted(EventBase):
    kind = EventKind.drift
    field: str = ""
    old: JsonValue = None
    new: JsonValue = None
    alert: bool = False
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class BudgetSkipped(EventBase):
    kind = EventKind.budget
    skipped: tuple[str, ...] = ()
    reason: str = ""
    daily_budget_usd: float = 0.0
    alert: bool = True


@dataclass(frozen=True, kw_only=True)
class ExclusionAdded(EventBase):
    kind = EventKind.exclusion_added
    id: int | None = None
    reason: str = ""
    until: datetime | None = None
    force: bool = False
    usable_before: int | None = None
    usable_after: int | None = None
    withholds: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ExclusionRemoved(EventBase):
    kind = EventKind.exclusion_removed
    id: int | None = None
    reason: str = ""
    was: str = ""


@dataclass(frozen=True, kw_only=True)
class MaintenanceAdded(EventBase):
    """A maintenance window: until it ends, the endpoints it names are probed but their results
    decide nothing (:func:`canary.core.quarantine.decide_model`)."""

    kind = EventKind.maintenance_added
    id: int | None = None
    reason: str = ""
    until: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class MaintenanceRemoved(ExclusionRemoved):
    kind = EventKind.maintenance_removed


@dataclass(frozen=True, kw_only=True)
class ControlMissing(EventBase):
    kind = EventKind.control_missing
    contract: Contract = Contract.refusal
    missing: tuple[str, ...] = ()
    why: str = ""
    alert: bool | None = field(default=None, metadata=OPTIONAL)  # once a day (runner)


@dataclass(frozen=True, kw_only=True)
class FloorBreached(EventBase):
    """Opens a floor episode: fewer usable endpoints than the capacity floor."""

    kind = EventKind.floor_breached
    usable: int = 0
    floor: int = 0
    usable_endpoints: tuple[str, ...] = ()
    listed: int = 0
    why: str = ""
    alert: bool = True
    action: Action | None = field(default=None, metadata=OPTIONAL)
    policy_version: str | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class FloorRestored(EventBase):
    kind = EventKind.floor_restored
    usable: int = 0
    floor: int = 0
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class Republished(EventBase):
    kind = EventKind.republished
    quarantine_id: int | None = None
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class ReportConfirmed(EventBase):
    """A focused check confirmed a failure apps reported on an endpoint (one failing look)."""

    kind = EventKind.report_confirmed
    contracts: tuple[str, ...] = ()
    reports: tuple[int, ...] = ()  # the report ids behind the check


@dataclass(frozen=True, kw_only=True)
class NotCounted(EventBase):
    """A look too close to the previous counted one: the counts it would move stay."""

    kind = EventKind.not_counted
    not_counted: str = ""
    contracts: tuple[str, ...] = ()
    recovery: bool = False
    previous: dict[str, datetime | None] = field(default_factory=dict)
    min_look_gap_minutes: float = 0.0
    why: str = ""
    alert: bool = False


@dataclass(frozen=True, kw_only=True)
class EqualityOutlier(EventBase):
    """Advisory (canary.core.equality): the endpoint's answers differ from its peers'. It never
    quarantines nor changes a list; an operator decides, with ``exclude add``."""

    kind = EventKind.equality_outlier
    check_id: int | None = None
    p_value: float | None = None
    known_p_value: float | None = None
    effect: float | None = None
    peers: int = 0
    why: str = ""


Event = (
    VerdictEvent
    | QuarantineStarted
    | Released
    | WouldQuarantine
    | FloorHeld
    | QuarantineWithheld
    | ProbeWeak
    | ModelWide
    | OperatorAlert
    | ListingAlert
    | Drifted
    | BudgetSkipped
    | ExclusionAdded
    | ExclusionRemoved
    | MaintenanceAdded
    | MaintenanceRemoved
    | ControlMissing
    | FloorBreached
    | FloorRestored
    | Republished
    | NotCounted
    | EqualityOutlier
    | ReportConfirmed
)
# the kinds whose ``why`` field says why (a release's is a code: expired, recovered, manual)
WITH_WHY = (
    Released,
    FloorHeld,
    QuarantineWithheld,
    ProbeWeak,
    ModelWide,
    ControlMissing,
    FloorBreached,
    FloorRestored,
    Republished,
    NotCounted,
    EqualityOutlier,
)
_ALERTING = (FloorHeld, QuarantineWithheld, Drifted, BudgetSkipped, ControlMissing, FloorBreached)


def explanation(event: Event) -> str:
    """What explains the event to a person: an operator's reason first, then the rule's why."""
    if isinstance(event, Released):
        return event.reason or event.why
    if isinstance(event, OperatorAlert):
        return event.error or ""
    if isinstance(event, ListingAlert):
        return event.listing
    if isinstance(event, VerdictEvent):
        return event.verdict.value
    if isinstance(event, ReportConfirmed):
        return f"reports {', '.join(map(str, event.reports))} confirmed: " + ", ".join(
            event.contracts
        )
    if isinstance(event, WITH_WHY):
        return event.why
    return event.reason or ""


def alerts(event: Event) -> bool:
    """Sent to operators: the rules marked the event an alert, or did not say (a kind that always
    alerts). A drift change alerts only when marked so."""
    return event.alert is not False if isinstance(event, _ALERTING) else True


_ADAPTERS: dict[type[Event], TypeAdapter[Event]] = {}  # built on first use, not at import


def event_of(
    kind: str,
    model: str | None,
    tag: str | None,
    detail: Mapping[str, JsonValue],
    evidence: tuple[Look, ...],
) -> Event:
    """An audit row's event. Raises ``ValueError`` for a kind no event has or a field of the
    wrong type."""
    cls: type[Event]
    if kind == EventKind.floor_held and "withheld" in detail:
        cls = QuarantineWithheld
    elif kind == EventKind.operator_alert and "listing" in detail:
        cls = ListingAlert
    elif (found := _KINDS.get(kind)) is not None:
        cls = found
    else:
        raise ValueError(f"no event of kind {kind!r}")
    fields_of = {f.name for f in fields(cls)}
    given = {k: v for k, v in detail.items() if k in fields_of}
    raw = {**given, "model": model or "", "tag": tag, "evidence": evidence}
    adapter = _ADAPTERS.get(cls) or _ADAPTERS.setdefault(cls, TypeAdapter[Event](cls))
    return adapter.validate_python(raw)


# the first class of a kind is the one its rows read as unless their keys say otherwise
_KINDS: dict[str, type[Event]] = {c.kind.value: c for c in reversed(get_args(Event))}
