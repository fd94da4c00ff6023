"""Evidence per contract: each (endpoint, contract) keeps its own failing count. Pure.

A defect must reproduce: a quarantine needs the SAME contract to fail ``failing_rounds`` rounds in
a row, with no pass of that contract in between, and one contract's missing evidence never hides
another contract's passes. Per contract, at each look (a round):

- ``fail`` sets the count to 1 when that contract's previous fail is older than
  ``streak_max_age_hours`` (or there was none), else adds 1;
- ``pass`` sets it to 0;
- ``inconclusive``, ``transport_error``, ``not_applicable`` and a skipped endpoint change nothing;
- every round, a count whose last fail is older than the max age is reset (:func:`age_out`).

Rounds in a row must stay apart (:func:`far_enough`): a failing look adds to a count only when
its round started at least ``min_look_gap_minutes`` after the look the count last rested on (a
daemon restarted late in a slot runs that slot at once and the next one on time, seconds later).
A closer failing look advances nothing and is reported ``too_close``; a pass still resets the
count. A streak's evidence is the looks that advanced it, so a quarantine never rests on two
looks closer than the gap.

A streak keeps its latest counted looks only (:func:`evidence_kept`: at least
``failing_rounds``, so a quarantine's evidence always covers its threshold, and at least 10): a
contract that fails for weeks on an endpoint held by the floor must not grow its state forever.

While quarantined, the recovery count (:func:`recover_count`) adds 1 at a look where every cause
passed and no contract failed (a look far enough from the previous counted clean look; a closer
one is ``too_close`` and changes nothing), resets on any fail, and is unchanged otherwise;
deliberately looser than "fully passing", so that an always-inconclusive contract cannot block
an early release.

The pending language (:func:`pending_language`) makes the next round repeat a language after an
anomaly; it survives inconclusive repeats for at most the max age.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from canary.core.model import (
    ALL_CONTRACTS,
    Contract,
    ContractResult,
    EndpointState,
    Look,
    Result,
    RoundVerdict,
    Streak,
    Verdict,
)

EVIDENCE_KEPT = 10  # looks a streak keeps at least (more when failing_rounds is larger)
TOO_CLOSE = "too_close"  # why a look was not counted


def evidence_kept(failing_rounds: int) -> int:
    """How many looks a streak keeps: its latest counted ones, never fewer than the threshold."""
    return max(failing_rounds, EVIDENCE_KEPT)


def _stale(last_fail_at: datetime | None, now: datetime, max_age: timedelta) -> bool:
    return last_fail_at is None or now - last_fail_at > max_age


def far_enough(previous: datetime | None, look: Look, gap: timedelta) -> bool:
    """May ``look`` advance a count that last rested on a look started at ``previous``? Yes
    when there was none, or when either start is unknown (a row from before looks carried
    their start), or when ``look`` started at least ``gap`` after it."""
    if previous is None or look.at is None:
        return True
    return look.at - previous >= gap


def last_counted_at(streak: Streak) -> datetime | None:
    """When the look the count last rested on started: its latest evidence's start, else (an
    older row whose evidence is bare round ids) the time of its last counted fail."""
    if streak.evidence and streak.evidence[-1].at is not None:
        return streak.evidence[-1].at
    return streak.last_fail_at


def age_out(streaks: Sequence[Streak], now: datetime, max_age: timedelta) -> tuple[Streak, ...]:
    """Drop the counts whose last fail is older than the max age."""
    return tuple(s for s in streaks if s.count > 0 and not _stale(s.last_fail_at, now, max_age))


@dataclass(frozen=True)
class Counted:
    """One look's effect on an endpoint's failing counts."""

    streaks: tuple[Streak, ...]  # per contract, sorted; zero counts dropped
    advanced: frozenset[Contract] = frozenset()  # failing contracts this look added to
    too_close: tuple[Contract, ...] = ()  # failing contracts this look was too close to count


def count_one(
    streak: Streak,
    result: Result,
    look: Look,
    now: datetime,
    max_age: timedelta,
    keep: int = EVIDENCE_KEPT,
    gap: timedelta = timedelta(),
) -> Streak:
    """The streak after one look's result (unchanged when a fail is too close to count: see
    :func:`far_enough`)."""
    if result is Result.fail:
        if _stale(streak.last_fail_at, now, max_age) or streak.count == 0:
            return Streak(streak.contract, 1, now, (look,))
        if not far_enough(last_counted_at(streak), look, gap):
            return streak
        evidence = (*streak.evidence, look)[-max(keep, 1) :]
        return replace(streak, count=streak.count + 1, last_fail_at=now, evidence=evidence)
    if result is Result.passed:
        return Streak(streak.contract)
    return streak


def count_round(
    state: EndpointState,
    results: Sequence[ContractResult],
    look: Look,
    now: datetime,
    max_age: timedelta,
    keep: int = EVIDENCE_KEPT,
    gap: timedelta = timedelta(),
) -> Counted:
    """The streaks after this look's (already adjusted) contract results; each keeps its latest
    ``keep`` counted looks. Says which failing contracts the look added to, and which it was
    too close to count."""
    by_contract = {s.contract: s for s in age_out(state.streaks, now, max_age)}
    advanced: set[Contract] = set()
    too_close: list[Contract] = []
    for r in results:
        current = by_contract.get(r.contract) or Streak(r.contract)
        after = count_one(current, r.result, look, now, max_age, keep, gap)
        if r.result is Result.fail:
            if after is current:
                too_close.append(r.contract)
            else:
                advanced.add(r.contract)
        by_contract[r.contract] = after
    streaks = tuple(s for c, s in sorted(by_contract.items()) if s.count > 0)
    return Counted(streaks, frozenset(advanced), tuple(sorted(too_close)))


def failed_contracts(results: Sequence[ContractResult]) -> tuple[Contract, ...]:
    return tuple(sorted({r.contract for r in results if r.result is Result.fail}))


def causes_now(
    streaks: Sequence[Streak], advanced: frozenset[Contract], failing_rounds: int
) -> tuple[Streak, ...]:
    """The streaks that make an endpoint a candidate: advanced by this look, count at the
    threshold. A fail too close to count makes nobody a candidate."""
    return tuple(s for s in streaks if s.contract in advanced and s.count >= failing_rounds)


def causes_passed(causes: Sequence[str], verdict: RoundVerdict) -> bool:
    """Every cause of the quarantine passed this round. A quarantine recorded before causes
    were kept (``all``) needs every applicable contract to pass, as it did then."""
    if ALL_CONTRACTS in causes:
        return verdict.verdict is Verdict.passed
    outcomes = {r.contract.value: r.result for r in verdict.results}
    return bool(causes) and all(outcomes.get(c) is Result.passed for c in causes)


def recover_count(
    state: EndpointState, verdict: RoundVerdict | None, look: Look, gap: timedelta = timedelta()
) -> tuple[EndpointState, bool]:
    """Advance, reset or keep the recovery count of a quarantined endpoint; True when a clean
    look was too close to the previous counted one to count."""
    if verdict is None:
        return state, False
    if failed_contracts(verdict.results):
        return replace(state, recovery_streak=0, recovery_evidence=()), False
    if causes_passed(state.causes, verdict):
        previous = state.recovery_evidence[-1].at if state.recovery_evidence else None
        if not far_enough(previous, look, gap):
            return state, True
        return replace(
            state,
            recovery_streak=state.recovery_streak + 1,
            recovery_evidence=(*state.recovery_evidence, look),
        ), False
    return state, False


def pending_language(
    state: EndpointState, verdict: RoundVerdict | None, now: datetime, max_age: timedelta
) -> tuple[str | None, datetime | None]:
    """The language the next round must repeat (and since when it is pending), or (None, None).

    An anomaly makes its language pending (again). A conclusive language result without one
    (pass or fail) clears it. Anything else (inconclusive, transport error, skipped, no
    language probe) keeps it, for at most the max age since it became pending.
    """
    if verdict is not None and verdict.language_anomaly_in is not None:
        return verdict.language_anomaly_in, now
    result = verdict.result_of(Contract.language) if verdict is not None else None
    if result is not None and result.result in (Result.passed, Result.fail):
        return None, None
    if state.next_language is None or _stale(state.next_language_since, now, max_age):
        return None, None
    return state.next_language, state.next_language_since
