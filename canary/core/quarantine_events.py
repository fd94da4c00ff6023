"""What a quarantine decision says: the starts and ends it makes, the candidates it weighs, and
the events (audit rows, notifications) each becomes. Pure; :mod:`canary.core.quarantine` decides.

Every event rests on looks (:class:`canary.core.model.Look`): a quarantine on the looks that
advanced its causes' counts (``evidence``, and each cause's own in ``evidence_by_cause``: causes
count apart, so their looks may interleave), an early release on the clean looks of its
recovery, and a ``not_counted`` row on the look that was too close to count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from canary.core.events import FloorHeld, NotCounted, QuarantineStarted, Released, WouldQuarantine
from canary.core.model import (
    DAY,
    Contract,
    EndpointState,
    Exclusion,
    Layer,
    Look,
    Result,
    RoundVerdict,
    Streak,
)
from canary.core.policy import PolicyRules
from canary.core.streaks import TOO_CLOSE, last_counted_at


@dataclass(frozen=True)
class QuarantineStart:
    model: str
    tag: str
    since: datetime
    until: datetime
    step: int  # position on the escalation ladder (1 = first)
    reason: str
    evidence: tuple[Look, ...]  # the looks that advanced the causes' counts, oldest first
    causes: tuple[str, ...] = ()  # the contracts whose streaks reached the threshold
    # each cause's own counted looks (causes count apart: their looks may interleave)
    by_cause: tuple[tuple[str, tuple[Look, ...]], ...] = ()

    def exclusion(self) -> Exclusion:
        return Exclusion(
            model=self.model,
            tag=self.tag,
            layer=Layer.quarantine,
            reason=self.reason,
            since=self.since,
            until=self.until,
            evidence=self.evidence,
            causes=self.causes,
        )


@dataclass(frozen=True)
class QuarantineEnd:
    model: str
    tag: str
    since: datetime | None  # start of the quarantine that ends
    until: datetime | None  # its planned end
    at: datetime  # when it ended
    why: str  # expired | recovered | manual
    evidence: tuple[Look, ...] = ()  # the clean looks counted (recovered)


def not_counted_event(
    state: EndpointState,
    look: Look,
    contracts: Sequence[Contract],
    recovery: bool,
    rules: PolicyRules,
) -> NotCounted:
    """The row of a look too close to count: which failing contracts (and whether a clean look
    of a quarantine's recovery) it left as they were, and the look each count rests on."""
    previous = {c.value: last_counted_at(state.streak(c)) for c in contracts}
    if recovery and state.recovery_evidence:
        previous["recovery"] = state.recovery_evidence[-1].at
    gap = rules.min_look_gap_minutes
    what = [c.value for c in contracts] + (["recovery"] if recovery else [])
    return NotCounted(
        model=state.model,
        tag=state.tag,
        not_counted=TOO_CLOSE,
        contracts=tuple(c.value for c in contracts),
        recovery=recovery,
        previous=previous,
        min_look_gap_minutes=gap,
        why=(
            f"{', '.join(what)}: this look started less than {gap:g} min after the look "
            "the count rests on, so it counts for nothing"
        ),
        evidence=(look,),
    )


@dataclass(frozen=True)
class Candidate:
    state: EndpointState
    causes: tuple[Streak, ...]  # the streaks at or over the threshold that failed this round

    @property
    def tag(self) -> str:
        return self.state.tag

    @property
    def worst(self) -> int:
        return max(s.count for s in self.causes)

    @property
    def evidence(self) -> tuple[Look, ...]:
        return looks_of_streaks(self.causes)

    @property
    def cause_names(self) -> tuple[str, ...]:
        return tuple(s.contract.value for s in self.causes)


def looks_of_streaks(streaks: Iterable[Streak]) -> tuple[Look, ...]:
    """The looks the streaks rest on, each once, oldest first."""
    looks = {look for s in streaks for look in s.evidence}
    return tuple(sorted(looks, key=_look_order))


def _look_order(look: Look) -> tuple[float, str, int]:
    return (look.at.timestamp() if look.at is not None else float("-inf"), look.kind, look.id)


def evidence_by_cause(streaks: Iterable[Streak]) -> dict[str, tuple[Look, ...]]:
    """Each cause's own counted looks (causes count apart, so their looks may interleave)."""
    return {s.contract.value: s.evidence for s in streaks}


def failure_reason(candidate: Candidate, verdict: RoundVerdict | None) -> str:
    """'schema failed 2 rounds in a row: <detail>; ttft failed 3 rounds in a row: <detail>'."""
    details = {
        r.contract: r.detail
        for r in (verdict.results if verdict else ())
        if r.result is Result.fail
    }
    parts = []
    for s in candidate.causes:
        part = f"{s.contract.value} failed {s.count} rounds in a row"
        parts.append(f"{part}: {details[s.contract]}" if s.contract in details else part)
    return "; ".join(parts)


def quarantine_event(start: QuarantineStart) -> QuarantineStarted:
    return QuarantineStarted(
        model=start.model,
        tag=start.tag,
        since=start.since,
        until=start.until,
        step=start.step,
        days=(start.until - start.since) / DAY,
        reason=start.reason,
        causes=start.causes,
        evidence_by_cause=dict(start.by_cause),
        evidence=start.evidence,
    )


def would_event(
    candidate: Candidate,
    fresh: Sequence[Streak],
    reason: str,
    holds: bool,
    usable: Sequence[str],
    floor: int,
) -> WouldQuarantine:
    return WouldQuarantine(
        model=candidate.state.model,
        tag=candidate.tag,
        reason=reason,
        causes=tuple(s.contract.value for s in fresh),
        failing_rounds=candidate.worst,
        floor_would_hold=holds,
        usable=tuple(usable),
        floor=floor,
        evidence_by_cause=evidence_by_cause(fresh),
        evidence=looks_of_streaks(fresh),
    )


def floor_event(
    candidate: Candidate,
    reason: str,
    usable: Sequence[str],
    floor: int,
    ordered: Sequence[Candidate],
    alert: bool,
) -> FloorHeld:
    """``alert``: the first round a streak is held (operators are told once per streak)."""
    left = len(usable) - 1
    return FloorHeld(
        model=candidate.state.model,
        tag=candidate.tag,
        kept=candidate.tag,
        why=(
            f"quarantining {candidate.tag} would leave {left} usable endpoint(s) on the "
            f"published list, below the capacity floor of {floor}"
        ),
        floor=floor,
        usable=tuple(usable),
        order=tuple(c.tag for c in ordered),
        reason=reason,
        causes=candidate.cause_names,
        failing_rounds=candidate.worst,
        evidence_by_cause=evidence_by_cause(candidate.causes),
        alert=alert,
        evidence=candidate.evidence,
    )


def release_event(end: QuarantineEnd) -> Released:
    return Released(
        model=end.model,
        tag=end.tag,
        why=end.why,
        since=end.since,
        until=end.until,
        at=end.at,
        evidence=end.evidence,
    )
