"""Frozen data shared by the pure rules. No I/O, no clock: every time is passed in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Literal, get_args, overload

from pydantic import JsonValue


class Contract(StrEnum):
    ttft = "ttft"
    refusal = "refusal"
    schema = "schema"
    language = "language"
    hygiene = "hygiene"
    tools = "tools"


class Result(StrEnum):
    passed = "pass"
    fail = "fail"
    inconclusive = "inconclusive"
    transport_error = "transport_error"
    not_applicable = "not_applicable"


class Transport(StrEnum):
    """What the wire said, classified before anything is judged."""

    ok = "ok"
    rate_limited = "rate_limited"
    provider_error = "provider_error"
    timeout = "timeout"
    unroutable = "unroutable"
    auth_config = "auth_config"
    bad_request = "bad_request"


# Transport classes that are our own problem (configuration or a bug), raised to operators.
OPERATOR_TRANSPORTS = frozenset({Transport.auth_config, Transport.bad_request})


class Verdict(StrEnum):
    """One endpoint's verdict for one round."""

    passed = "pass"  # every applicable contract passed
    fail = "fail"  # at least one contract failed conclusively (after round-level rules)
    inconclusive = "inconclusive"  # no failure, but not everything passed (weak probe, ambiguous)
    transport_error = "transport_error"  # only transport problems: freezes the count
    skipped = "skipped"  # not probed this round (budget): no evidence, freezes the count


class Mode(StrEnum):
    observe = "observe"
    enforce = "enforce"


class Layer(StrEnum):
    builtin = "builtin"
    runtime = "runtime"
    quarantine = "quarantine"
    control = "control"  # a positive control: a host known to filter, never usable capacity
    # a planned maintenance window: never an exclusion, it freezes what the endpoint's results
    # decide (canary.core.quarantine) and keeps it out of the model-wide rule
    maintenance = "maintenance"
    requirement = "requirement"  # a task profile's requirement the endpoint misses (a preference)


# The layers no floor withholds: human decisions (built-in, runtime) and the positive controls.
FIXED_LAYERS = frozenset({Layer.builtin, Layer.runtime, Layer.control})


class EventKind(StrEnum):
    verdict = "verdict"
    quarantine = "quarantine"
    release = "release"
    would_quarantine = "would_quarantine"
    floor_held = "floor_held"
    probe_weak = "probe_weak"
    model_wide = "model_wide"
    operator_alert = "operator_alert"  # auth/config or bad request: our problem
    drift = "drift"
    budget = "budget"
    exclusion_added = "exclusion_added"
    exclusion_removed = "exclusion_removed"
    control_missing = "control_missing"  # a positive control is not in the listing
    floor_breached = "floor_breached"  # opens a floor episode: usable < capacity floor
    floor_restored = "floor_restored"  # closes it: usable >= floor again
    republished = "republished"  # a quarantine held back by the floor is published again
    not_counted = "not_counted"  # a look too close to the previous counted one: nothing moved
    maintenance_added = "maintenance_added"
    maintenance_removed = "maintenance_removed"
    equality_outlier = "equality_outlier"  # advisory: an endpoint's answers differ from its peers'
    report_confirmed = "report_confirmed"  # a focused check confirmed what apps reported


# the kinds the outbox sends (webhooks, and Apprise notifiers unless their ``events`` say less)
NotifyKind = Literal[
    "quarantine", "would_quarantine", "release", "floor_held", "probe_weak", "model_wide",
    "operator_alert", "budget", "drift", "floor_breached", "floor_restored", "control_missing",
    "exclusion_added", "exclusion_removed", "maintenance_added", "maintenance_removed",
    "equality_outlier",
    "report_confirmed",
]  # fmt: skip
NOTIFY_KINDS: tuple[NotifyKind, ...] = get_args(NotifyKind)


class LookKind(StrEnum):
    """What started a look at an endpoint: a scheduled round (later: a focused check that an
    app's report started)."""

    round = "round"
    focused = "focused"


@dataclass(frozen=True)
class Look:
    """One look at an endpoint that a count can rest on: its kind, its id (the round id for a
    round) and when it started. ``at`` is None only for a look recorded before looks carried
    their start (a bare round id in an older row)."""

    kind: LookKind
    id: int
    at: datetime | None

    @classmethod
    def round(cls, round_id: int, at: datetime | None) -> Look:
        return cls(LookKind.round, round_id, at)

    def as_json(self) -> dict[str, JsonValue]:
        """``{"kind", "id", "at"}``, ``at`` in ISO-8601 UTC with a ``Z`` (null when unknown)."""
        return {"kind": self.kind.value, "id": self.id, "at": iso_utc(self.at)}

    @classmethod
    def of_json(cls, raw: JsonValue | Look) -> Look:
        """A look as stored: ``{"kind", "id", "at"}``, or a bare round id (rows written before
        looks were stored), which is a look of kind ``round`` whose start is unknown."""
        if isinstance(raw, Look):
            return raw
        if isinstance(raw, Mapping):
            at = raw.get("at")
            when = None if at is None else datetime.fromisoformat(str(at).replace("Z", "+00:00"))
            return cls(LookKind(str(raw.get("kind", "round"))), int(str(raw["id"])), when)
        return cls(LookKind.round, int(str(raw)), None)


DAY = timedelta(days=1)


@overload
def iso_utc(moment: datetime) -> str: ...
@overload
def iso_utc(moment: None) -> None: ...
@overload
def iso_utc(moment: datetime | None) -> str | None: ...
def iso_utc(moment: datetime | None) -> str | None:
    """ISO-8601 in UTC with a ``Z`` suffix (naive datetimes are taken as UTC); None stays None."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def looks_json(looks: Iterable[Look]) -> list[JsonValue]:
    return [look.as_json() for look in looks]


def looks_of(raw: Iterable[JsonValue | Look] | None) -> tuple[Look, ...]:
    """Looks as stored (see :meth:`Look.of_json`); None is none."""
    return tuple(Look.of_json(x) for x in raw or ())


@dataclass(frozen=True)
class Pricing:
    """USD per token, as OpenRouter publishes it."""

    prompt: float
    completion: float


@dataclass(frozen=True)
class Endpoint:
    """One provider endpoint of a model, from the endpoints list."""

    model: str
    tag: str  # routing slug: what provider.only/order/ignore name
    provider_name: str  # display name: what answers carry in `provider`
    pricing: Pricing
    supported_parameters: tuple[str, ...] = ()
    quantization: str | None = None
    context_length: int | None = None
    max_completion_tokens: int | None = None
    status: int | None = None
    uptime_last_30m: float | None = None
    latency_last_30m: dict[str, float] | None = None  # OpenRouter's own figures, ms
    throughput_last_30m: dict[str, float] | None = None  # OpenRouter's own figures, tokens/s
    service_tier: str | None = None  # flex | priority | ...: a base slug does not match it
    raw: dict[str, JsonValue] = field(default_factory=dict, compare=False, repr=False)

    def supports(self, parameter: str) -> bool:
        return parameter in self.supported_parameters


@dataclass(frozen=True)
class ToolCall:
    index: int
    id: str | None
    name: str | None
    arguments: str  # the raw JSON text as reassembled from the deltas


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class Observation:
    """What one probe request saw on the wire. Nothing is judged here."""

    contract: Contract
    tag: str
    transport: Transport
    language: str | None = None
    attempt: int = 1
    status: int | None = None
    error: str | None = None  # classified error message (never a secret)
    served_by: str | None = None  # the `provider` the answer named
    attribution_ok: bool = True  # False: answered by another provider than the pinned one
    ttft_s: float | None = None  # request sent -> first non-empty content delta
    # A stall: the stream was open (HTTP 200) but no token came within the first-token timeout.
    # ttft_s then holds that timeout, a lower bound of the real time (a censored sample).
    ttft_censored: bool = False
    reasoning_s: float | None = None  # request sent -> first reasoning delta
    total_s: float | None = None
    content: str = ""
    finish_reason: str | None = None
    native_finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    checksum: str = ""  # checksum of the probe definition used
    nonce: str = ""
    started_at: float | None = None  # wall clock (epoch seconds) when the request was sent
    served_model: str | None = None  # the `model` the answer reported
    response_id: str | None = None  # the answer's `id` (the generation id)
    # False: no connection to OpenRouter could be opened (connect error or connect timeout, no
    # HTTP answer at all): the request never reached it (canary.core.probing)
    connected: bool = True

    @property
    def completed(self) -> bool:
        """A generation that finished on the wire: the only kind that can fail a quality contract."""
        return self.transport is Transport.ok and self.attribution_ok


@dataclass(frozen=True)
class ContractResult:
    contract: Contract
    result: Result
    detail: str  # the measured figure and the rule it was held to
    figure: float | None = None
    sample: str = ""  # a short sample of the answer
    reason: str | None = None  # machine-readable reason (e.g. "probe_weak", "invalid_json")
    language: str | None = None
    language_anomaly: bool = False


@dataclass(frozen=True)
class RoundVerdict:
    model: str
    tag: str
    verdict: Verdict
    results: tuple[ContractResult, ...]
    language_anomaly_in: str | None = None  # language whose anomaly must be repeated next round

    def result_of(self, contract: Contract) -> ContractResult | None:
        for r in self.results:
            if r.contract is contract:
                return r
        return None


@dataclass(frozen=True)
class Exclusion:
    """One entry of one exclusion layer."""

    model: str
    tag: str
    layer: Layer
    reason: str
    since: datetime | None = None
    until: datetime | None = None
    evidence: tuple[Look, ...] = ()  # the looks it rests on (quarantine layer)
    id: int | None = None
    causes: tuple[str, ...] = ()  # quarantine layer: the contracts that caused it

    def active(self, now: datetime) -> bool:
        return (self.since is None or self.since <= now) and (
            self.until is None or now < self.until
        )


ALL_CONTRACTS = "all"  # the causes of a quarantine recorded before causes were kept


@dataclass(frozen=True)
class Streak:
    """One contract's failing count on one endpoint (see canary.core.streaks)."""

    contract: Contract
    count: int = 0
    last_fail_at: datetime | None = None
    evidence: tuple[Look, ...] = ()  # the failing looks counted, oldest first
    warned: bool = False  # would_quarantine or floor_held was alerted for this streak


@dataclass(frozen=True)
class EndpointState:
    """What the rules remember about one (model, endpoint) between rounds."""

    model: str
    tag: str
    streaks: tuple[Streak, ...] = ()  # per contract, sorted by contract; zero counts dropped
    recovery_streak: int = 0  # rounds in a row, while quarantined, where every cause passed
    recovery_evidence: tuple[Look, ...] = ()  # the clean looks counted, oldest first
    quarantined_since: datetime | None = None
    quarantined_until: datetime | None = None  # set only while a quarantine is enforced
    causes: tuple[str, ...] = ()  # contracts that caused the quarantine (or ALL_CONTRACTS)
    ladder_step: int = 0  # how many quarantines count on the escalation ladder
    last_quarantine_at: datetime | None = None  # start of the latest quarantine (ladder decay)
    next_language: str | None = None  # repeat this language next round (after an anomaly)
    next_language_since: datetime | None = None  # when that language became pending
    version: int = 0  # compare-and-set guard in the store

    def quarantined(self, now: datetime) -> bool:
        return self.quarantined_until is not None and now < self.quarantined_until

    def streak(self, contract: Contract) -> Streak:
        for s in self.streaks:
            if s.contract is contract:
                return s
        return Streak(contract)

    @property
    def failing_streak(self) -> int:
        """The longest failing count among the contracts: what operators see as "failing"."""
        return max((s.count for s in self.streaks), default=0)
