"""Evidence per contract: each (endpoint, contract) keeps its own failing count. Pure.

A defect must reproduce: a quarantine needs the SAME contract to fail ``failing_rounds`` rounds in
a row, with no pass of that contract in between, and one contract's missing evidence never hides
another contract's passes. Per contract, in each round:

- ``fail`` sets the count to 1 when that contract's previous fail is older than
  ``streak_max_age_hours`` (or there was none), else adds 1;
- ``pass`` sets it to 0;
- ``inconclusive``, ``transport_error``, ``not_applicable`` and a skipped endpoint change nothing;
- every round, a count whose last fail is older than the max age is reset (:func:`age_out`).

A streak keeps the round ids of its latest failures only (:func:`evidence_kept`: at least
``failing_rounds``, so a quarantine's evidence always covers its threshold, and at least 10): a
contract that fails for weeks on an endpoint held by the floor must not grow its state forever.

While quarantined, the recovery count (:func:`recover_count`) adds 1 in a round where every cause
passed and no contract failed, resets on any fail, and is unchanged otherwise; deliberately looser
than "fully passing", so that an always-inconclusive contract cannot block an early release.

The pending language (:func:`pending_language`) makes the next round repeat a language after an
anomaly; it survives inconclusive repeats for at most the max age.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from canary.core.model import (
    ALL_CONTRACTS,
    Contract,
    ContractResult,
    EndpointState,
    Result,
    RoundVerdict,
    Streak,
    Verdict,
)

EVIDENCE_KEPT = 10  # round ids a streak keeps at least (more when failing_rounds is larger)


def evidence_kept(failing_rounds: int) -> int:
    """How many round ids a streak keeps: its latest failures, never fewer than the threshold."""
    return max(failing_rounds, EVIDENCE_KEPT)


def _stale(last_fail_at: datetime | None, now: datetime, max_age: timedelta) -> bool:
    return last_fail_at is None or now - last_fail_at > max_age


def age_out(streaks: Sequence[Streak], now: datetime, max_age: timedelta) -> tuple[Streak, ...]:
    """Drop the counts whose last fail is older than the max age."""
    return tuple(s for s in streaks if s.count > 0 and not _stale(s.last_fail_at, now, max_age))


def count_one(
    streak: Streak,
    result: Result,
    round_id: int,
    now: datetime,
    max_age: timedelta,
    keep: int = EVIDENCE_KEPT,
) -> Streak:
    if result is Result.fail:
        if _stale(streak.last_fail_at, now, max_age) or streak.count == 0:
            return Streak(streak.contract, 1, now, (round_id,))
        evidence = (*streak.evidence, round_id)[-max(keep, 1) :]
        return replace(streak, count=streak.count + 1, last_fail_at=now, evidence=evidence)
    if result is Result.passed:
        return Streak(streak.contract)
    return streak


def count_round(
    state: EndpointState,
    results: Sequence[ContractResult],
    round_id: int,
    now: datetime,
    max_age: timedelta,
    keep: int = EVIDENCE_KEPT,
) -> tuple[Streak, ...]:
    """The streaks after this round's (already adjusted) contract results; each keeps the round
    ids of its latest ``keep`` failures."""
    by_contract = {s.contract: s for s in age_out(state.streaks, now, max_age)}
    for r in results:
        current = by_contract.get(r.contract) or Streak(r.contract)
        by_contract[r.contract] = count_one(current, r.result, round_id, now, max_age, keep)
    return tuple(s for c, s in sorted(by_contract.items()) if s.count > 0)


def failed_contracts(results: Sequence[ContractResult]) -> tuple[Contract, ...]:
    return tuple(sorted({r.contract for r in results if r.result is Result.fail}))


def causes_now(
    streaks: Sequence[Streak], results: Sequence[ContractResult], failing_rounds: int
) -> tuple[Streak, ...]:
    """The streaks that make an endpoint a candidate: failed this round, count at the threshold."""
    failed = set(failed_contracts(results))
    return tuple(s for s in streaks if s.contract in failed and s.count >= failing_rounds)


def causes_passed(causes: Sequence[str], verdict: RoundVerdict) -> bool:
    """Every cause of the quarantine passed this round. A quarantine recorded before causes
    were kept (``all``) needs every applicable contract to pass, as it did then."""
    if ALL_CONTRACTS in causes:
        return verdict.verdict is Verdict.passed
    outcomes = {r.contract.value: r.result for r in verdict.results}
    return bool(causes) and all(outcomes.get(c) is Result.passed for c in causes)


def recover_count(
    state: EndpointState, verdict: RoundVerdict | None, round_id: int
) -> EndpointState:
    """Advance, reset or keep the recovery count of a quarantined endpoint."""
    if verdict is None:
        return state
    if failed_contracts(verdict.results):
        return replace(state, recovery_streak=0, recovery_evidence=())
    if causes_passed(state.causes, verdict):
        return replace(
            state,
            recovery_streak=state.recovery_streak + 1,
            recovery_evidence=(*state.recovery_evidence, round_id),
        )
    return state


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
