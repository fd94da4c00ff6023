"""Rounds in a row stay apart: a look counts only at least ``min_look_gap_minutes`` after the look
the count rests on (issue 30, defect 1), and the property that no quarantine or release rests on
two looks closer than that, under any schedule of round starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from core_builders import ENFORCE, MODEL, OBSERVE, T0, cr, ids, listing, quarantine_entries
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.core.events import Event
from canary.core.model import (
    Contract,
    EndpointState,
    EventKind,
    Look,
    Mode,
    Result,
    RoundVerdict,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import Decision, decide_model
from canary.core.streaks import TOO_CLOSE
from canary.core.verdict import aggregate

GAP = timedelta(minutes=ENFORCE.min_look_gap_minutes)  # 10 minutes by default
INTERVAL = timedelta(minutes=30)


def verdict(tag: str, results: Mapping[Contract, Result]) -> RoundVerdict:
    return aggregate(MODEL, tag, [cr(c, r) for c, r in results.items()])


class Schedule:
    """decide_model driven by hand-set round starts (a new round id each)."""

    def __init__(
        self,
        tags: Sequence[str] = ("a", "b", "c", "d"),
        rules: PolicyRules = ENFORCE,
        floor: int = 1,
    ) -> None:
        self.tags = tuple(tags)
        self.rules = rules
        self.floor = floor
        self.states: dict[str, EndpointState] = {}
        self.round_id = 0

    def look(self, at: datetime, results: Mapping[str, Mapping[Contract, Result]]) -> Decision:
        self.round_id += 1
        verdicts = {
            t: verdict(t, results.get(t, {Contract.schema: Result.passed})) for t in self.tags
        }
        decision = decide_model(
            MODEL,
            self.states,
            verdicts,
            look=Look.round(self.round_id, at),
            now=at,
            rules=self.rules,
            capacity_floor=self.floor,
            listing=listing(*self.tags),
            quarantines=quarantine_entries(self.states, at),
        )
        self.states = dict(decision.states)
        return decision


SCHEMA_FAILS = {"a": {Contract.schema: Result.fail}}


def events(decision: Decision, kind: EventKind) -> list[Event]:
    return [e for e in decision.events if e.kind is kind]


def test_a_restart_late_in_a_slot_does_not_make_two_rounds_seconds_apart_count_twice() -> None:
    """serve started 9 s before a slot's end runs that slot at once, then the next on time."""
    s = Schedule()
    late = T0 + INTERVAL - timedelta(seconds=9)
    first = s.look(late, SCHEMA_FAILS)
    assert not events(first, EventKind.quarantine)
    second = s.look(T0 + INTERVAL, SCHEMA_FAILS)
    assert not events(second, EventKind.quarantine) and not second.quarantines
    [skipped] = events(second, EventKind.not_counted)
    assert skipped.tag == "a" and skipped.detail["not_counted"] == TOO_CLOSE
    assert skipped.detail["contracts"] == ["schema"] and skipped.detail["recovery"] is False
    assert skipped.detail["alert"] is False and ids(skipped.evidence) == (2,)
    streak = s.states["a"].streak(Contract.schema)
    assert streak.count == 1 and ids(streak.evidence) == (1,)  # the close look advanced nothing
    third = s.look(T0 + 2 * INTERVAL, SCHEMA_FAILS)
    [quarantine] = events(third, EventKind.quarantine)
    assert ids(quarantine.evidence) == (1, 3)  # only the looks that advanced the count
    assert [look.at for look in quarantine.evidence] == [late, T0 + 2 * INTERVAL]
    assert quarantine.detail["evidence_by_cause"]["schema"] == [
        look.as_json() for look in quarantine.evidence
    ]


def test_a_pass_too_close_still_resets_a_failing_count() -> None:
    s = Schedule()
    s.look(T0, SCHEMA_FAILS)
    s.look(T0 + timedelta(minutes=1), {"a": {Contract.schema: Result.passed}})
    assert s.states["a"].streak(Contract.schema).count == 0


def test_a_look_exactly_the_gap_after_counts() -> None:
    s = Schedule()
    s.look(T0, SCHEMA_FAILS)
    decision = s.look(T0 + GAP, SCHEMA_FAILS)
    assert ids(decision.quarantines[0].evidence) == (1, 2)
    assert not events(decision, EventKind.not_counted)


def test_a_fail_too_close_makes_no_candidate_of_a_count_already_at_the_threshold() -> None:
    """Held by the floor with its count at 2, an endpoint that fails again seconds later is not
    weighed again on that look (it rests on nothing new); the next look far enough is."""
    s = Schedule(("a", "b"), floor=2)
    s.look(T0, SCHEMA_FAILS)
    [held] = events(s.look(T0 + INTERVAL, SCHEMA_FAILS), EventKind.floor_held)
    assert ids(held.evidence) == (1, 2)
    close = s.look(T0 + INTERVAL + timedelta(seconds=5), SCHEMA_FAILS)
    assert not events(close, EventKind.floor_held) and events(close, EventKind.not_counted)
    assert s.states["a"].failing_streak == 2
    [again] = events(s.look(T0 + 2 * INTERVAL, SCHEMA_FAILS), EventKind.floor_held)
    assert ids(again.evidence) == (1, 2, 4) and again.detail["failing_rounds"] == 3


def test_recovery_counts_only_clean_looks_the_gap_apart() -> None:
    s = Schedule()
    s.look(T0, SCHEMA_FAILS)
    s.look(T0 + INTERVAL, SCHEMA_FAILS)  # quarantined
    assert s.states["a"].quarantined(T0 + INTERVAL)
    clean = {"a": {Contract.schema: Result.passed}}
    s.look(T0 + 2 * INTERVAL - timedelta(seconds=3), clean)  # restarted late in a slot
    close = s.look(T0 + 2 * INTERVAL, clean)
    [skipped] = events(close, EventKind.not_counted)
    assert skipped.detail["recovery"] is True and skipped.detail["contracts"] == []
    assert not close.releases and s.states["a"].recovery_streak == 1
    released = s.look(T0 + 3 * INTERVAL, clean)
    [end] = released.releases
    assert end.why == "recovered" and ids(end.evidence) == (3, 5)


def test_a_fail_too_close_still_resets_recovery() -> None:
    s = Schedule()
    s.look(T0, SCHEMA_FAILS)
    s.look(T0 + INTERVAL, SCHEMA_FAILS)
    s.look(T0 + 2 * INTERVAL, {"a": {Contract.schema: Result.passed}})
    assert s.states["a"].recovery_streak == 1
    s.look(T0 + 2 * INTERVAL + timedelta(seconds=5), SCHEMA_FAILS)
    assert s.states["a"].recovery_streak == 0 and s.states["a"].recovery_evidence == ()


def test_a_streak_from_before_looks_carried_their_start_measures_from_its_last_fail() -> None:
    """A stored streak whose evidence is a bare round id (start unknown) is measured from its
    last counted fail, which is that look's start."""
    from canary.core.model import Streak

    s = Schedule()
    old = Streak(Contract.schema, 1, T0, (Look.round(1, None),))
    s.states["a"] = EndpointState(MODEL, "a", streaks=(old,))
    s.round_id = 1
    close = s.look(T0 + timedelta(seconds=30), SCHEMA_FAILS)
    assert events(close, EventKind.not_counted) and not close.quarantines
    far = s.look(T0 + INTERVAL, SCHEMA_FAILS)
    assert ids(far.quarantines[0].evidence) == (1, 3)


# --- the property ---------------------------------------------------------------------------

SLOTS = st.lists(
    st.one_of(
        st.just(("on_time", 0)),  # the slot's round at its start
        st.tuples(st.just("late"), st.integers(1, 30 * 60 - 1)),  # (re)started late in the slot
        st.just(("skipped", 0)),  # no replica ran it (an outage)
        st.tuples(st.just("close"), st.integers(1, 20 * 60)),  # any start, seconds after the last
    ),
    min_size=2,
    max_size=24,
)
OUTCOMES = st.sampled_from([Result.fail, Result.fail, Result.passed, Result.inconclusive])
CONTRACTS = (Contract.schema, Contract.ttft)


def starts_of(slots: Sequence[tuple[str, int]]) -> list[datetime]:
    """Round starts, strictly increasing: one per slot run (on time or late), and closer ones."""
    out: list[datetime] = []
    for k, (how, seconds) in enumerate(slots):
        slot = T0 + k * INTERVAL
        if how == "skipped":
            continue
        if how == "close" and out:
            at = out[-1] + timedelta(seconds=seconds)
        else:
            at = slot + timedelta(seconds=seconds)
        if out and at <= out[-1]:
            at = out[-1] + timedelta(seconds=1)
        out.append(at)
    return out


def assert_apart(looks: Sequence[Look], gap: timedelta, what: str) -> None:
    starts = [look.at for look in looks]
    assert all(at is not None for at in starts), what
    for before, after in zip(starts, starts[1:], strict=False):
        assert before is not None and after is not None
        assert after - before >= gap, f"{what}: looks {before} and {after} closer than {gap}"


@settings(max_examples=examples(200), deadline=None)
@given(
    SLOTS,
    st.data(),
    st.sampled_from([ENFORCE, OBSERVE, PolicyRules(mode=Mode.enforce, min_look_gap_minutes=0.25)]),
)
def test_no_quarantine_or_release_rests_on_two_looks_closer_than_the_gap(
    slots: list[tuple[str, int]], data: st.DataObject, rules: PolicyRules
) -> None:
    gap = rules.min_look_gap
    s = Schedule(("a", "b", "c"), rules=rules)
    for at in starts_of(slots):
        results = {
            tag: {c: data.draw(OUTCOMES) for c in CONTRACTS} for tag in ("a", "b")
        }  # c passes: capacity
        decision = s.look(at, results)
        this = Look.round(s.round_id, at)
        for e in decision.events:
            if e.kind in (EventKind.quarantine, EventKind.would_quarantine, EventKind.floor_held):
                by_cause = e.detail["evidence_by_cause"]
                assert by_cause, e
                for cause, raw in by_cause.items():
                    looks = [Look.of_json(x) for x in raw]
                    assert len(looks) >= rules.failing_rounds, (cause, looks)
                    assert looks[-1] == this  # decided on a look that counted
                    assert_apart(looks, gap, f"{e.kind} {e.tag} {cause}")
            if e.kind is EventKind.release and e.detail["why"] == "recovered":
                assert len(e.evidence) >= rules.recovery_rounds and e.evidence[-1] == this
                assert_apart(e.evidence, gap, f"release {e.tag}")
        for start in decision.quarantines:
            for _cause, looks in start.by_cause:
                assert_apart(looks, gap, f"quarantine {start.tag}")
        for state in decision.states.values():
            for streak in state.streaks:
                assert_apart(streak.evidence, gap, f"streak {state.tag} {streak.contract}")
            assert_apart(state.recovery_evidence, gap, f"recovery {state.tag}")
