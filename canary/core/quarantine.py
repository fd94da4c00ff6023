"""The quarantine state machine: previous states + round verdicts + ``now`` -> next states, events.

Per endpoint, in this order (each rule is one function):

1. :func:`expire` — a quarantine whose end has come is released (why ``expired``); every count
   restarts, so the endpoint must fail again, contract by contract, to return.
2. :func:`canary.core.streaks.count_round` — each contract's own failing count (see that module);
   a look too close to the one a count last rested on advances nothing (``not_counted`` row).
3. :func:`recover` — a quarantined endpoint whose causes passed ``recovery_rounds`` rounds in a
   row (no contract failing, each look far enough from the previous counted one) is released
   early (why ``recovered``).
4. :func:`canary.core.streaks.pending_language` — an anomaly makes the next round repeat its
   language.

Then per model, :func:`decide_model` takes the candidates (not quarantined; a contract's count
advanced by this look to ``failing_rounds`` or more: those contracts are the causes) in
:func:`candidate_order` and, in enforce mode, quarantines each unless that would leave fewer
usable endpoints than the capacity floor on the published list (``floor_held``: audited every
round the candidate is held, alerted once per contract streak); in observe mode it emits
``would_quarantine`` once per contract streak and changes no quarantine. A streak's ``warned``
flag records that operators were told of it, by either event.

An endpoint in a maintenance window is frozen for the look, as one skipped by the budget: its
results move nothing (only time does: a quarantine still ends on time).

Between rounds, :func:`expire_due` releases the quarantines whose end has come and drops pending
languages older than the max age (what the passage of time alone decides).

The escalation ladder (:func:`ladder_step`) counts from the START of the latest quarantine: when
``ladder_reset_days`` or more have passed since then, the next quarantine is step 1 again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.events import Event, Released
from canary.core.floor import publish
from canary.core.identity import Listed, named_tags
from canary.core.model import (
    Contract,
    EndpointState,
    Exclusion,
    Look,
    Mode,
    RoundVerdict,
    Streak,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine_events import (
    Candidate,
    QuarantineEnd,
    QuarantineStart,
    failure_reason,
    floor_event,
    not_counted_event,
    quarantine_event,
    release_event,
    would_event,
)
from canary.core.streaks import (
    causes_now,
    count_round,
    evidence_kept,
    pending_language,
    recover_count,
)

__all__ = [
    "Decision",
    "NotQuarantined",
    "QuarantineEnd",
    "QuarantineStart",
    "decide_model",
    "expire_due",
    "quarantine_event",
    "release_event",
    "release_manually",
]

EXPIRED = "expired"
RECOVERED = "recovered"
MANUAL = "manual"


class NotQuarantined(LookupError):
    """A manual release was asked for an endpoint that has no quarantine."""

    def __init__(self, model: str, tag: str) -> None:
        super().__init__(f"{tag} is not quarantined for {model}")
        self.model = model
        self.tag = tag


@dataclass(frozen=True)
class Decision:
    states: dict[str, EndpointState]  # the next state of EVERY endpoint considered (see changed)
    events: tuple[Event, ...]
    quarantines: tuple[QuarantineStart, ...]
    releases: tuple[QuarantineEnd, ...]
    changed: tuple[str, ...] = ()  # tags whose state differs from the one passed in (sorted)


# --- per-endpoint rules -------------------------------------------------------------------


def _released(state: EndpointState) -> EndpointState:
    """Out of quarantine, every count restarted; the ladder position and its date are kept."""
    return replace(
        state,
        quarantined_since=None,
        quarantined_until=None,
        causes=(),
        streaks=(),
        recovery_streak=0,
        recovery_evidence=(),
    )


def expire(state: EndpointState, now: datetime) -> tuple[EndpointState, QuarantineEnd | None]:
    """Release a quarantine whose end is at or before ``now``."""
    if state.quarantined_until is None or now < state.quarantined_until:
        return state, None
    end = QuarantineEnd(
        state.model, state.tag, state.quarantined_since, state.quarantined_until, now, EXPIRED
    )
    return _released(state), end


def recover(
    state: EndpointState, now: datetime, rules: PolicyRules
) -> tuple[EndpointState, QuarantineEnd | None]:
    """Release a quarantined endpoint early after ``recovery_rounds`` rounds of passing causes."""
    if not state.quarantined(now) or state.recovery_streak < rules.recovery_rounds:
        return state, None
    end = QuarantineEnd(
        state.model,
        state.tag,
        state.quarantined_since,
        state.quarantined_until,
        now,
        RECOVERED,
        state.recovery_evidence,
    )
    return _released(state), end


@dataclass(frozen=True)
class Step:
    """One endpoint through one look."""

    state: EndpointState
    ends: tuple[QuarantineEnd, ...] = ()  # expired, recovered
    advanced: frozenset[Contract] = frozenset()  # failing contracts whose count the look advanced
    not_counted: Event | None = None  # the look was too close to count (a not_counted row)


def step_endpoint(
    state: EndpointState,
    verdict: RoundVerdict | None,
    *,
    look: Look,
    now: datetime,
    rules: PolicyRules,
) -> Step:
    """One endpoint through one look: expire, count, recover, pending language.

    ``verdict`` None means no evidence this round (not probed, skipped by the budget).
    """
    max_age, gap = rules.streak_max_age, rules.min_look_gap
    before = state
    state, expired = expire(state, now)
    results = verdict.results if verdict is not None else ()
    keep = evidence_kept(rules.failing_rounds)
    counted = count_round(state, results, look, now, max_age, keep, gap)
    state = replace(state, streaks=counted.streaks)
    close_recovery = False
    if state.quarantined(now):
        state, close_recovery = recover_count(state, verdict, look, gap)
    state, recovered = recover(state, now, rules)
    language, since = pending_language(state, verdict, now, max_age)
    state = replace(state, next_language=language, next_language_since=since)
    ends = tuple(e for e in (expired, recovered) if e is not None)
    skipped = None
    if counted.too_close or close_recovery:
        skipped = not_counted_event(before, look, counted.too_close, close_recovery, rules)
    return Step(state, ends, counted.advanced, skipped)


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


def candidate_of(
    state: EndpointState,
    advanced: frozenset[Contract],
    verdict: RoundVerdict | None,
    now: datetime,
    rules: PolicyRules,
) -> Candidate | None:
    """Not quarantined, and this look advanced a contract's count to the threshold."""
    if verdict is None or state.quarantined(now):
        return None
    causes = causes_now(state.streaks, advanced, rules.failing_rounds)
    return Candidate(state, causes) if causes else None


def candidate_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Most failing rounds in a row first, then tag name: the worst endpoint leaves first."""
    return sorted(candidates, key=lambda c: (-c.worst, c.tag))


# --- per-model decision -------------------------------------------------------------------


def decide_model(
    model: str,
    states: Mapping[str, EndpointState],
    verdicts: Mapping[str, RoundVerdict],
    *,
    look: Look,
    now: datetime,
    rules: PolicyRules,
    capacity_floor: int,
    listing: Sequence[Listed],
    human: Sequence[Exclusion] = (),
    quarantines: Sequence[Exclusion] = (),
    skipped: Collection[str] = (),
    controls: Controls = NO_CONTROLS,
    maintenance: Sequence[Exclusion] = (),
) -> Decision:
    """Decide one look (a round) of one model.

    ``states``: the previous state per tag (missing tags start fresh). ``verdicts``: this round's
    verdict per probed tag; a tag without one, or listed in ``skipped``, had no evidence and is
    frozen. ``look``: this round as a look (its kind, id and start). ``listing``: the model's
    endpoints this round. ``human``: the built-in and runtime entries; ``quarantines``: the
    quarantine entries as published before this round (the floor is counted on the published
    list, see :mod:`canary.core.floor`); ``controls``: the model's positive controls (never
    usable capacity). ``maintenance``: the model's maintenance windows; an endpoint one names
    while it is in force (``until`` after ``now``) is frozen like a skipped one, whatever its
    verdict: no count moves, no quarantine starts or is released by its results, no event is
    raised for it (its quarantine still ends on time, and it still counts as usable capacity).

    Returns the next state of every tag considered (``changed`` lists those that differ) and the
    events: release, not_counted, quarantine, floor_held (enforce), would_quarantine (observe).
    """
    tags = sorted({e.tag for e in listing} | set(states) | set(verdicts) | set(skipped))
    windows = [w for w in maintenance if w.model == model]
    nothing = frozenset(skipped) | named_tags(windows, listing, now)
    nexts: dict[str, EndpointState] = {}
    releases: list[QuarantineEnd] = []
    candidates: list[Candidate] = []
    skipped_looks: list[Event] = []
    for tag in tags:
        verdict = None if tag in nothing else verdicts.get(tag)
        state = states.get(tag) or EndpointState(model=model, tag=tag)
        step = step_endpoint(state, verdict, look=look, now=now, rules=rules)
        nexts[tag] = step.state
        releases.extend(step.ends)
        if step.not_counted is not None:
            skipped_looks.append(step.not_counted)
        candidate = candidate_of(step.state, step.advanced, verdict, now, rules)
        if candidate is not None:
            candidates.append(candidate)
    events = [release_event(end) for end in releases] + skipped_looks
    released = {end.tag for end in releases}
    standing = [q for q in quarantines if q.tag not in released]
    starts: list[QuarantineStart] = []
    ordered = candidate_order(candidates)
    for candidate in ordered:
        entries = [*standing, *(s.exclusion() for s in starts)]
        before = publish(
            model, listing, human, (), entries, floor=capacity_floor, now=now, controls=controls
        )
        usable = before.usable or ()
        holds = candidate.tag in usable and len(usable) - 1 < capacity_floor
        reason = failure_reason(candidate, verdicts.get(candidate.tag))
        if rules.mode is Mode.observe:
            fresh = tuple(s for s in candidate.causes if not s.warned)
            if not holds:  # what enforce mode would have done
                starts.append(_start(candidate, now, rules, reason))
            if fresh:
                nexts[candidate.tag] = _warned(nexts[candidate.tag], fresh)
                events.append(would_event(candidate, fresh, reason, holds, usable, capacity_floor))
            continue
        if holds:
            fresh = tuple(s for s in candidate.causes if not s.warned)
            if fresh:  # alerted once per streak, audited every round it is held
                nexts[candidate.tag] = _warned(nexts[candidate.tag], fresh)
            events.append(
                floor_event(candidate, reason, usable, capacity_floor, ordered, bool(fresh))
            )
            continue
        start = _start(candidate, now, rules, reason)
        starts.append(start)
        nexts[candidate.tag] = replace(
            nexts[candidate.tag],
            quarantined_since=now,
            quarantined_until=start.until,
            causes=start.causes,
            ladder_step=start.step,
            last_quarantine_at=now,
            recovery_streak=0,
            recovery_evidence=(),
        )
        events.append(quarantine_event(start))
    if rules.mode is Mode.observe:
        starts = []
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


def _warned(state: EndpointState, fresh: Sequence[Streak]) -> EndpointState:
    marked = {s.contract for s in fresh}
    return replace(
        state,
        streaks=tuple(
            replace(s, warned=True) if s.contract in marked else s for s in state.streaks
        ),
    )


def _start(candidate: Candidate, now: datetime, rules: PolicyRules, reason: str) -> QuarantineStart:
    state = candidate.state
    step = ladder_step(state, now, rules)
    return QuarantineStart(
        state.model,
        state.tag,
        now,
        quarantine_until(state, now, step, rules),
        step,
        reason,
        candidate.evidence,
        candidate.cause_names,
        tuple((s.contract.value, s.evidence) for s in candidate.causes),
    )


def release_manually(
    state: EndpointState, *, now: datetime, reason: str, actor: str
) -> tuple[EndpointState, QuarantineEnd, Released]:
    """An operator ends a quarantine. Every count restarts; the ladder position is kept.

    Raises :class:`NotQuarantined` when the state has no quarantine in force at ``now``.
    """
    if not state.quarantined(now):
        raise NotQuarantined(state.model, state.tag)
    end = QuarantineEnd(
        state.model, state.tag, state.quarantined_since, state.quarantined_until, now, MANUAL
    )
    event = release_event(end)
    event = replace(event, reason=reason, actor=actor)
    return _released(state), end, event


def expire_due(
    states: Mapping[str, EndpointState], now: datetime, max_age: timedelta | None = None
) -> tuple[dict[str, EndpointState], tuple[QuarantineEnd, ...], tuple[Event, ...]]:
    """Between rounds (housekeeping): release every quarantine whose end has come and, given
    ``max_age``, drop every pending language older than it (a round after a long outage must not
    repeat a stale language). Returns only the states that changed."""
    nexts: dict[str, EndpointState] = {}
    ends: list[QuarantineEnd] = []
    for tag, state in sorted(states.items()):
        after, end = expire(state, now)
        if max_age is not None:
            language, since = pending_language(after, None, now, max_age)
            after = replace(after, next_language=language, next_language_since=since)
        if end is not None:
            ends.append(end)
        if after != state:
            nexts[tag] = after
    return nexts, tuple(ends), tuple(release_event(e) for e in ends)
