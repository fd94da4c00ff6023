"""Builders shared by the pure-core tests: a fixed clock, verdicts, a fleet driven by rounds (the
records themselves from tests/builders.py)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from builders import result as contract_result

from canary.core.events import Event
from canary.core.identity import Listed
from canary.core.model import (
    Contract,
    ContractResult,
    EndpointState,
    EventKind,
    Exclusion,
    Layer,
    Look,
    Mode,
    Result,
    RoundVerdict,
    Streak,
    Verdict,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import Decision, decide_model

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
INTERVAL = timedelta(minutes=30)
MODEL = "acme/roleplay-1"
ENFORCE = PolicyRules(mode=Mode.enforce)
OBSERVE = PolicyRules(mode=Mode.observe)


def cr(
    contract: Contract,
    result: Result,
    detail: str = "",
    *,
    language: str | None = None,
    anomaly: bool = False,
) -> ContractResult:
    return contract_result(contract, result, detail, language=language, language_anomaly=anomaly)


def rv(tag: str, verdict: Verdict, *, anomaly_in: str | None = None) -> RoundVerdict:
    """A round verdict with one matching contract result (schema), enough for the state machine."""
    result = {
        Verdict.passed: Result.passed,
        Verdict.fail: Result.fail,
        Verdict.inconclusive: Result.inconclusive,
        Verdict.transport_error: Result.transport_error,
        Verdict.skipped: Result.not_applicable,
    }[verdict]
    results: tuple[ContractResult, ...] = (cr(Contract.schema, result, f"schema {result.value}"),)
    if anomaly_in is not None:
        results += (cr(Contract.language, Result.fail, "mixed", language=anomaly_in, anomaly=True),)
    return RoundVerdict(MODEL, tag, verdict, results, language_anomaly_in=anomaly_in)


def failing(
    tag: str,
    count: int,
    *,
    contract: Contract = Contract.schema,
    evidence: tuple[int, ...] | None = None,
    last_fail_at: datetime = T0 - INTERVAL,
    **fields: object,
) -> EndpointState:
    """A state whose ``contract`` failed ``count`` rounds in a row, the last one an interval ago
    (``evidence``: the round ids of those looks, one interval apart up to ``last_fail_at``)."""
    rounds = evidence if evidence is not None else tuple(range(1, count + 1))
    looks = tuple(
        Look.round(r, last_fail_at - (len(rounds) - 1 - i) * INTERVAL) for i, r in enumerate(rounds)
    )
    streak = Streak(contract, count, last_fail_at, looks)
    return EndpointState(MODEL, tag, streaks=(streak,), **fields)  # type: ignore[arg-type]


def listing(*tags: str) -> tuple[Listed, ...]:
    return tuple(Listed(t) for t in tags)


def runtime(*tags: str, model: str = MODEL) -> tuple[Exclusion, ...]:
    return tuple(Exclusion(model, t, Layer.runtime, "operator") for t in tags)


def window(tag: str, until: datetime, *, model: str = MODEL) -> Exclusion:
    """A maintenance window of ``tag`` (a tag or a provider slug) until ``until``."""
    return Exclusion(model, tag, Layer.maintenance, "planned upgrade", since=T0, until=until)


def quarantine_entries(states: Mapping[str, EndpointState], now: datetime) -> list[Exclusion]:
    """The quarantine layer as the store would publish it for these states."""
    return [
        Exclusion(
            MODEL,
            s.tag,
            Layer.quarantine,
            "q",
            since=s.quarantined_since,
            until=s.quarantined_until,
            id=i,
        )  # fmt: skip
        for i, s in enumerate(sorted(states.values(), key=lambda s: s.tag), 1)
        if s.quarantined(now)
    ]


LETTERS = {
    "F": Verdict.fail,
    "P": Verdict.passed,
    "T": Verdict.transport_error,
    "I": Verdict.inconclusive,
}


class Fleet:
    """Drives decide_model round by round on a hand-set clock: round k at T0 + (k-1) * 30 min."""

    def __init__(
        self,
        tags: Collection[str] = ("a", "b", "c", "d"),
        *,
        rules: PolicyRules = ENFORCE,
        floor: int = 2,
        other_excluded: Collection[str] = (),
    ) -> None:
        self.tags = tuple(tags)
        self.rules = rules
        self.floor = floor
        self.other_excluded = set(other_excluded)
        self.states: dict[str, EndpointState] = {}
        self.now = T0
        self.round_id = 0
        self.decisions: list[Decision] = []

    def round(
        self,
        verdicts: Mapping[str, Verdict | RoundVerdict] | None = None,
        *,
        skipped: Collection[str] = (),
        maintenance: Sequence[Exclusion] = (),
    ) -> Decision:
        """One round at ``self.now``: unnamed tags pass; then the clock moves one interval."""
        self.round_id += 1
        given = dict(verdicts or {})
        full: dict[str, RoundVerdict] = {}
        for tag in self.tags:
            v = given.get(tag, Verdict.passed)
            full[tag] = v if isinstance(v, RoundVerdict) else rv(tag, v)
        decision = decide_model(
            MODEL,
            self.states,
            {t: v for t, v in full.items() if t not in skipped},
            look=Look.round(self.round_id, self.now),
            now=self.now,
            rules=self.rules,
            capacity_floor=self.floor,
            listing=listing(*self.tags),
            human=runtime(*sorted(self.other_excluded)),
            quarantines=quarantine_entries(self.states, self.now),
            skipped=skipped,
            maintenance=maintenance,
        )
        self.states = dict(decision.states)
        self.decisions.append(decision)
        self.at = self.now
        self.now += INTERVAL
        return decision

    def run(self, tag: str, sequence: str) -> list[Decision]:
        """Rounds where ``tag`` gets the verdicts spelled by letters (F P T I S), others pass."""
        out = []
        for letter in sequence:
            if letter == "S":
                out.append(self.round(skipped=(tag,)))
            else:
                out.append(self.round({tag: LETTERS[letter]}))
        return out

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def state(self, tag: str) -> EndpointState:
        return self.states.get(tag) or EndpointState(MODEL, tag)


def kinds(decision: Decision, kind: EventKind) -> list[Event]:
    return [e for e in decision.events if e.kind is kind]


def ids(looks: Collection[Look]) -> tuple[int, ...]:
    """The ids of looks (round ids), in their order."""
    return tuple(look.id for look in looks)
