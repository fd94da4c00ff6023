"""The quarantine state machine: previous states + round verdicts + ``now`` -> next states, events.

Per endpoint, in this order (each rule is one function below):

1. :func:`expire` — a quarantine whose end has come is released (why ``expired``); both streaks
   restart, so the endpoint must fail ``failing_rounds`` rounds in a row again to return.
2. :func:`count` — ``fail`` advances the failing streak and resets the passing one; ``pass`` does
   the opposite; ``transport_error``, ``inconclusive`` and ``skipped`` (no evidence) freeze both.
3. :func:`recover` — a quarantined endpoint that passed ``recovery_rounds`` rounds in a row is
   released early (why ``recovered``).
4. :func:`next_language` — a language anomaly makes the next round repeat that language.

Then per model, :func:`decide_model` takes the candidates (not quarantined, failing this round,
streak at or over ``failing_rounds``) in :func:`candidate_order` and, in enforce mode, quarantines
each unless the capacity floor would be broken (:func:`capacity_left`); in observe mode it emits
``would_quarantine`` once per streak and changes no quarantine.

The escalation ladder (:func:`ladder_step`) counts from the START of the latest quarantine: when
``ladder_reset_days`` or more have passed since then, the next quarantine is step 1 again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from canary.core.layers import iso_utc
from canary.core.model import (
    Contract,
    EndpointState,
    Event,
    EventKind,
    Exclusion,
    Layer,
    Mode,
    Result,
    RoundVerdict,
    Verdict,
)
from canary.core.policy import PolicyRules

EXPIRED = "expired"
RECOVERED = "recovered"
MANUAL = "manual"

_FROZEN = frozenset({Verdict.transport_error, Verdict.inconclusive, Verdict.skipped})


class NotQuarantined(LookupError):
    """A manual release was asked for an endpoint that has no quarantine."""

    def __init__(self, model: str, tag: str) -> None:
        super().__init__(f"{tag} is not quarantined for {model}")
        self.model = model
        self.tag = tag


@dataclass(frozen=True)
class QuarantineStart:
    model: str
    tag: str
    since: datetime
    until: datetime
    step: int  # position on the escalation ladder (1 = first)
    reason: str
    evidence: tuple[int, ...]  # round ids of the failing streak

    def exclusion(self) -> Exclusion:
        return Exclusion(
            model=self.model,
            tag=self.tag,
            layer=Layer.quarantine,
            reason=self.reason,
            since=self.since,
            until=self.until,
            evidence=self.evidence,
        )


@dataclass(frozen=True)
class QuarantineEnd:
    model: str
    tag: str
    since: datetime | None  # start of the quarantine that ends
    until: datetime | None  # its planned end
    at: datetime  # when it ended
    why: str  # expired | recovered | manual
    evidence: tuple[int, ...] = ()  # passing round ids (recovered)


@dataclass(frozen=True)
class Decision:
    states: dict[str, EndpointState]  # the next state of EVERY endpoint considered (see changed)
    events: tuple[Event, ...]
    quarantines: tuple[QuarantineStart, ...]
    releases: tuple[QuarantineEnd, ...]
    changed: tuple[str, ...] = ()  # tags whose state differs from the one passed in (sorted)


# --- per-endpoint rules -------------------------------------------------------------------


def expire(state: EndpointState, now: datetime) -> tuple[EndpointState, QuarantineEnd | None]:
    """Release a quarantine whose end is at or before ``now``; both streaks restart at 0."""
    if state.quarantined_until is None or now < state.quarantined_until:
        return state, None
    end = QuarantineEnd(
        state.model, state.tag, state.quarantined_since, state.quarantined_until, now, EXPIRED
    )
    return _released(state), end


def _released(state: EndpointState) -> EndpointState:
    """Out of quarantine, streaks restarted; the ladder position and its date are kept."""
    return replace(
        state,
        quarantined_since=None,
        quarantined_until=None,
        failing_streak=0,
        passing_streak=0,
        evidence=(),
    )


def count(state: EndpointState, verdict: Verdict, round_id: int, now: datetime) -> EndpointState:
    """Advance or reset the streaks; frozen verdicts (no conclusive evidence) change nothing.

    ``evidence`` holds the round ids of the current failing streak, or, while quarantined, of the
    current passing streak (the evidence of an early release).
    """
    if verdict in _FROZEN:
        return state
    if verdict is Verdict.fail:
        kept = state.evidence if state.failing_streak > 0 else ()
        return replace(
            state,
            failing_streak=state.failing_streak + 1,
            passing_streak=0,
            evidence=kept + (round_id,),
        )
    kept = state.evidence if state.passing_streak > 0 and state.quarantined(now) else ()
    evidence = kept + (round_id,) if state.quarantined(now) else ()
    return replace(
        state, failing_streak=0, passing_streak=state.passing_streak + 1, evidence=evidence
    )


def recover(
    state: EndpointState, now: datetime, rules: PolicyRules
) -> tuple[EndpointState, QuarantineEnd | None]:
    """Release a quarantined endpoint early after ``recovery_rounds`` fully passing rounds."""
    if not state.quarantined(now) or state.passing_streak < rules.recovery_rounds:
        return state, None
    end = QuarantineEnd(
        state.model,
        state.tag,
        state.quarantined_since,
        state.quarantined_until,
        now,
        RECOVERED,
        state.evidence,
    )
    return _released(state), end


def next_language(state: EndpointState, verdict: RoundVerdict | None) -> str | None:
    """The language the next round must use for this endpoint, or None to keep rotating.

    A round that measured the language contract (a result other than a transport error or
    not-applicable) decides: its anomaly language, or None. A round that did not measure it
    (skipped, transport error, no language result) keeps the pending language, so a frozen round
    cannot dodge the repetition.
    """
    if verdict is None:
        return state.next_language
    result = verdict.result_of(Contract.language)
    measured = result is not None and result.result not in (
        Result.transport_error,
        Result.not_applicable,
    )
    if verdict.language_anomaly_in is not None or measured:
        return verdict.language_anomaly_in
    return state.next_language


def ladder_step(state: EndpointState, now: datetime, rules: PolicyRules) -> int:
    """The ladder position of a new quarantine: previous + 1, or 1 after a quiet spell.

    The spell is measured from the start of the latest quarantine (``last_quarantine_at``): when
    ``ladder_reset_days`` or more have passed, the history stops counting.
    """
    last = state.last_quarantine_at
    if last is None or state.ladder_step <= 0:
        return 1
    if now - last >= timedelta(days=rules.ladder_reset_days):
        return 1
    return state.ladder_step + 1


def ladder_days(step: int, rules: PolicyRules) -> float:
    return rules.ladder_days[min(max(step, 1), len(rules.ladder_days)) - 1]


def quarantine_until(
    state: EndpointState, now: datetime, step: int, rules: PolicyRules
) -> datetime:
    """The end of a quarantine starting now; never earlier than an end already recorded."""
    until = now + timedelta(days=ladder_days(step, rules))
    if state.quarantined_until is not None and state.quarantined_until > until:
        return state.quarantined_until
    return until


def is_candidate(
    state: EndpointState, verdict: Verdict | None, now: datetime, rules: PolicyRules
) -> bool:
    """Not quarantined, failed this round, and the failing streak reached the threshold."""
    return (
        verdict is Verdict.fail
        and not state.quarantined(now)
        and state.failing_streak >= rules.failing_rounds
    )


def candidate_order(candidates: Iterable[EndpointState]) -> list[EndpointState]:
    """Most failing rounds in a row first, then tag name: the worst endpoint leaves first."""
    return sorted(candidates, key=lambda s: (-s.failing_streak, s.tag))


def capacity_left(
    all_tags: Collection[str], excluded: Collection[str], removing: str
) -> tuple[list[str], int]:
    """The endpoints outside every layer now, and how many would stay if ``removing`` left."""
    outside = sorted(t for t in set(all_tags) if t not in excluded)
    return outside, len([t for t in outside if t != removing])


# --- per-model decision -------------------------------------------------------------------


def decide_model(
    model: str,
    states: Mapping[str, EndpointState],
    verdicts: Mapping[str, RoundVerdict],
    *,
    round_id: int,
    now: datetime,
    rules: PolicyRules,
    capacity_floor: int,
    other_excluded: Collection[str],
    all_tags: Collection[str],
    skipped: Collection[str] = (),
) -> Decision:
    """Decide one round of one model.

    ``states``: the previous state per tag (missing tags start fresh). ``verdicts``: this round's
    verdict per probed tag; a tag without a verdict, or listed in ``skipped``, had no evidence and
    is frozen. ``all_tags``: the model's current endpoints (the capacity). ``other_excluded``: tags
    excluded now by the built-in and runtime layers; quarantines are read from ``states`` (after
    this round's releases), so do not pass them here.

    Returns the next state of every tag considered (``changed`` lists those that differ) and the
    events: release, quarantine, floor_held (enforce), would_quarantine (observe).
    """
    tags = sorted(set(all_tags) | set(states) | set(verdicts) | set(skipped))
    nothing = frozenset(skipped)
    nexts: dict[str, EndpointState] = {}
    releases: list[QuarantineEnd] = []
    verdict_of: dict[str, Verdict | None] = {}
    for tag in tags:
        state = states.get(tag) or EndpointState(model=model, tag=tag)
        rv = None if tag in nothing else verdicts.get(tag)
        verdict_of[tag] = None if rv is None else rv.verdict
        state, expired = expire(state, now)
        state = count(state, Verdict.skipped if rv is None else rv.verdict, round_id, now)
        state, recovered = recover(state, now, rules)
        state = replace(state, next_language=next_language(state, rv))
        releases.extend(e for e in (expired, recovered) if e is not None)
        nexts[tag] = state
    events = [_release_event(end) for end in releases]
    candidates = candidate_order(
        s for tag, s in nexts.items() if is_candidate(s, verdict_of[tag], now, rules)
    )
    excluded = set(other_excluded) | {t for t, s in nexts.items() if s.quarantined(now)}
    starts: list[QuarantineStart] = []
    for state in candidates:
        outside, left = capacity_left(all_tags, excluded, state.tag)
        holds = left < capacity_floor and state.tag in outside
        reason = _failure_reason(state, verdicts.get(state.tag))
        if rules.mode is Mode.observe:
            if not holds:
                excluded.add(state.tag)  # what enforce mode would have done
            if state.failing_streak == rules.failing_rounds:
                events.append(_would_event(state, reason, holds, outside, capacity_floor))
            continue
        if holds:
            events.append(_floor_event(state, reason, outside, left, capacity_floor, candidates))
            continue
        start = _start(state, now, rules, reason)
        starts.append(start)
        excluded.add(state.tag)
        nexts[state.tag] = replace(
            state,
            quarantined_since=now,
            quarantined_until=start.until,
            ladder_step=start.step,
            last_quarantine_at=now,
            passing_streak=0,
        )
        events.append(_quarantine_event(start))
    changed = tuple(
        t for t in tags if nexts[t] != (states.get(t) or EndpointState(model=model, tag=t))
    )
    return Decision(
        states=nexts,
        events=tuple(events),
        quarantines=tuple(starts),
        releases=tuple(releases),
        changed=changed,
    )


def _start(state: EndpointState, now: datetime, rules: PolicyRules, reason: str) -> QuarantineStart:
    step = ladder_step(state, now, rules)
    return QuarantineStart(
        state.model,
        state.tag,
        now,
        quarantine_until(state, now, step, rules),
        step,
        reason,
        state.evidence,
    )


def _failure_reason(state: EndpointState, verdict: RoundVerdict | None) -> str:
    head = f"failed {state.failing_streak} rounds in a row"
    if verdict is None:
        return head
    fails = [f"{r.contract.value}: {r.detail}" for r in verdict.results if r.result is Result.fail]
    return f"{head}: {'; '.join(fails)}" if fails else head


def _quarantine_event(start: QuarantineStart) -> Event:
    return Event(
        kind=EventKind.quarantine,
        model=start.model,
        tag=start.tag,
        detail={
            "since": iso_utc(start.since),
            "until": iso_utc(start.until),
            "step": start.step,
            "days": (start.until - start.since) / timedelta(days=1),
            "reason": start.reason,
        },
        evidence=start.evidence,
    )


def _would_event(
    state: EndpointState, reason: str, holds: bool, outside: list[str], floor: int
) -> Event:
    return Event(
        kind=EventKind.would_quarantine,
        model=state.model,
        tag=state.tag,
        detail={
            "reason": reason,
            "failing_rounds": state.failing_streak,
            "floor_would_hold": holds,
            "outside": outside,
            "floor": floor,
        },
        evidence=state.evidence,
    )


def _floor_event(
    state: EndpointState,
    reason: str,
    outside: list[str],
    left: int,
    floor: int,
    candidates: list[EndpointState],
) -> Event:
    return Event(
        kind=EventKind.floor_held,
        model=state.model,
        tag=state.tag,
        detail={
            "kept": state.tag,
            "why": (
                f"quarantining {state.tag} would leave {left} endpoint(s) outside every "
                f"exclusion layer, below the capacity floor of {floor}"
            ),
            "floor": floor,
            "outside": outside,
            "order": [c.tag for c in candidates],
            "reason": reason,
            "failing_rounds": state.failing_streak,
            "alert": True,
        },
        evidence=state.evidence,
    )


def _release_event(end: QuarantineEnd) -> Event:
    return Event(
        kind=EventKind.release,
        model=end.model,
        tag=end.tag,
        detail={
            "why": end.why,
            "since": iso_utc(end.since),
            "until": iso_utc(end.until),
            "at": iso_utc(end.at),
        },
        evidence=end.evidence,
    )


def release_manually(
    state: EndpointState, *, now: datetime, reason: str, actor: str
) -> tuple[EndpointState, Event]:
    """An operator ends a quarantine. Streaks restart; the ladder position is kept.

    Raises :class:`NotQuarantined` when the state has no quarantine to end.
    """
    if state.quarantined_until is None:
        raise NotQuarantined(state.model, state.tag)
    end = QuarantineEnd(
        state.model, state.tag, state.quarantined_since, state.quarantined_until, now, MANUAL
    )
    event = _release_event(end)
    event = replace(event, detail={**event.detail, "reason": reason, "actor": actor})
    return _released(state), event
