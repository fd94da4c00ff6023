"""Sequence tests of the quarantine state machine: one rule per test, a hand-advanced clock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_builders import (
    ENFORCE,
    INTERVAL,
    MODEL,
    T0,
    Fleet,
    failing,
    ids,
    kinds,
    listing,
    quarantine_entries,
    rv,
)

from canary.core.model import Contract, EndpointState, EventKind, Layer, Look, Verdict
from canary.core.policy import PolicyRules
from canary.core.quarantine import (
    NotQuarantined,
    decide_model,
    ladder_step,
    quarantine_until,
    release_manually,
)

DAY = timedelta(days=1)


def quarantined_tags(fleet: Fleet) -> list[str]:
    return sorted(t for t, s in fleet.states.items() if s.quarantined(fleet.now))


# --- counting -----------------------------------------------------------------------------


def test_two_failing_rounds_quarantine_at_the_second_never_the_first() -> None:
    fleet = Fleet()
    first, second = fleet.run("a", "FF")
    assert kinds(first, EventKind.quarantine) == []
    assert fleet.decisions[0].states["a"].quarantined_until is None
    [event] = kinds(second, EventKind.quarantine)
    start = T0 + INTERVAL
    assert event.tag == "a" and ids(event.evidence) == (1, 2)
    assert event.detail["until"] == "2026-01-06T12:30:00Z" and event.detail["step"] == 1
    assert event.detail["days"] == 1.0
    [q] = second.quarantines
    assert (q.since, q.until, q.step, ids(q.evidence)) == (start, start + DAY, 1, (1, 2))
    assert q.reason == "schema failed 2 rounds in a row: schema fail"
    assert q.causes == ("schema",)
    assert fleet.state("a").quarantined_since == start


def test_transport_error_between_failures_freezes_the_count() -> None:
    fleet = Fleet()
    fleet.run("a", "FT")
    assert fleet.state("a").streak(Contract.schema).count == 1
    [third] = fleet.run("a", "F")
    assert [e.tag for e in kinds(third, EventKind.quarantine)] == ["a"]
    assert ids(third.quarantines[0].evidence) == (1, 3)


def test_a_pass_between_failures_resets_the_count() -> None:
    fleet = Fleet()
    decisions = fleet.run("a", "FPF")
    assert all(not d.quarantines for d in decisions)
    assert fleet.state("a").failing_streak == 1
    assert ids(fleet.state("a").streak(Contract.schema).evidence) == (3,)


def test_inconclusive_freezes_the_count() -> None:
    fleet = Fleet()
    fleet.run("a", "FI")
    assert fleet.state("a").failing_streak == 1
    [third] = fleet.run("a", "F")
    assert [q.tag for q in third.quarantines] == ["a"]


def test_skipped_round_is_no_evidence_and_freezes_the_count() -> None:
    fleet = Fleet()
    fleet.run("a", "FS")
    assert fleet.state("a").failing_streak == 1
    assert fleet.decisions[-1].quarantines == ()
    [third] = fleet.run("a", "F")
    assert [q.tag for q in third.quarantines] == ["a"]


def test_skipped_wins_over_a_verdict_given_for_the_same_tag() -> None:
    state = failing("a", 1)
    decision = decide_model(
        MODEL, {"a": state}, {"a": rv("a", Verdict.fail)}, look=Look.round(2, T0), now=T0, rules=ENFORCE,
        capacity_floor=0, listing=listing("a"), skipped=("a",),
    )  # fmt: skip
    assert decision.quarantines == () and decision.states["a"] == state


def test_endpoint_without_a_verdict_is_frozen() -> None:
    state = failing("a", 1)
    decision = decide_model(
        MODEL, {"a": state}, {}, look=Look.round(2, T0), now=T0, rules=ENFORCE, capacity_floor=0,
        listing=listing("a", "b"),
    )  # fmt: skip
    assert decision.states["a"] == state
    assert decision.changed == ()


def test_a_fleet_of_transport_errors_changes_nothing() -> None:
    fleet = Fleet()
    for _ in range(5):
        fleet.round({t: Verdict.transport_error for t in fleet.tags})
    assert all(s == EndpointState(MODEL, t) for t, s in fleet.states.items())


# --- recovery and expiry ------------------------------------------------------------------


def test_two_passing_rounds_release_a_quarantine_early() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    first_pass, second_pass = fleet.run("a", "PP")
    assert first_pass.releases == ()
    assert fleet.decisions[-2].states["a"].quarantined_until is not None
    [event] = kinds(second_pass, EventKind.release)
    assert event.tag == "a" and event.detail["why"] == "recovered" and ids(event.evidence) == (3, 4)
    state = fleet.state("a")
    assert state.quarantined_until is None and state.ladder_step == 1
    assert state.failing_streak == 0 and state.recovery_streak == 0 and state.causes == ()


def test_transport_error_between_passes_still_releases() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    decisions = fleet.run("a", "PTP")
    assert [len(d.releases) for d in decisions] == [0, 0, 1]
    assert decisions[-1].releases[0].why == "recovered"
    assert ids(decisions[-1].releases[0].evidence) == (3, 5)


def test_a_failure_while_quarantined_restarts_the_recovery() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    decisions = fleet.run("a", "PFP")
    assert all(d.releases == () for d in decisions)
    assert fleet.state("a").quarantined(fleet.now)


def test_expiry_releases_and_two_fresh_failures_are_needed_to_return() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    until = fleet.state("a").quarantined_until
    assert until is not None
    fleet.run("a", "FF")  # still failing while quarantined: no new quarantine, no extension
    assert fleet.state("a").quarantined_until == until
    fleet.now = until
    [at_expiry] = fleet.run("a", "F")
    [release] = kinds(at_expiry, EventKind.release)
    assert release.detail["why"] == "expired" and at_expiry.quarantines == ()
    assert fleet.state("a").streak(Contract.schema).count == 1
    assert fleet.state("a").quarantined_until is None
    [again] = fleet.run("a", "F")
    [q] = again.quarantines
    assert q.step == 2 and q.until - q.since == 3 * DAY


def test_expiry_is_seen_even_when_the_endpoint_is_skipped() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    fleet.now = fleet.state("a").quarantined_until + timedelta(minutes=1)
    [decision] = fleet.run("a", "S")
    assert [r.why for r in decision.releases] == ["expired"]


# --- escalation ladder --------------------------------------------------------------------


def quarantine_again(fleet: Fleet) -> timedelta:
    """Fail twice, return the new quarantine's length, then jump to its expiry."""
    _, second = fleet.run("a", "FF")
    [q] = second.quarantines
    fleet.now = q.until
    length: timedelta = q.until - q.since
    return length


def test_ladder_escalates_1_3_7_7_days() -> None:
    fleet = Fleet()
    lengths = [quarantine_again(fleet) for _ in range(4)]
    assert lengths == [DAY, 3 * DAY, 7 * DAY, 7 * DAY]
    assert fleet.state("a").ladder_step == 4


def test_ladder_restarts_after_14_days_without_a_new_quarantine() -> None:
    fleet = Fleet()
    assert quarantine_again(fleet) == DAY
    start = fleet.state("a").last_quarantine_at
    assert start is not None
    fleet.run("a", "P")
    fleet.now = start + timedelta(days=14)
    assert quarantine_again(fleet) == DAY
    assert fleet.state("a").ladder_step == 1


def test_ladder_keeps_counting_just_before_14_days() -> None:
    fleet = Fleet()
    quarantine_again(fleet)
    start = fleet.state("a").last_quarantine_at
    assert start is not None
    fleet.now = start + timedelta(days=14) - INTERVAL - timedelta(minutes=1)
    assert quarantine_again(fleet) == 3 * DAY  # second failure lands 1 min before 14 days


@pytest.mark.parametrize(
    ("since_last", "step"),
    [(None, 1), (timedelta(days=13, hours=23, minutes=59), 3), (timedelta(days=14), 1)],
)
def test_ladder_step_is_measured_from_the_start_of_the_last_quarantine(
    since_last: timedelta | None, step: int
) -> None:
    last = None if since_last is None else T0 - since_last
    state = EndpointState(MODEL, "a", ladder_step=2, last_quarantine_at=last)
    assert ladder_step(state, T0, ENFORCE) == step


def test_a_quarantine_never_shortens_a_recorded_end() -> None:
    later = T0 + 7 * DAY
    state = EndpointState(MODEL, "a", quarantined_until=later)
    assert quarantine_until(state, T0, 1, ENFORCE) == later
    assert quarantine_until(EndpointState(MODEL, "a"), T0, 1, ENFORCE) == T0 + DAY


def test_a_failing_quarantined_endpoint_keeps_its_longer_end_under_a_shorter_policy() -> None:
    until = T0 + 7 * DAY
    state = failing(
        "a", 5, quarantined_since=T0 - DAY, quarantined_until=until, causes=("schema",),
        ladder_step=3, last_quarantine_at=T0 - DAY,
    )  # fmt: skip
    short = PolicyRules(ladder_days=(0.5,), mode=ENFORCE.mode)
    decision = decide_model(
        MODEL, {"a": state}, {"a": rv("a", Verdict.fail)}, look=Look.round(9, T0), now=T0, rules=short,
        capacity_floor=0, listing=listing("a", "b", "c"),
        quarantines=quarantine_entries({"a": state}, T0),
    )  # fmt: skip
    assert decision.quarantines == ()
    assert decision.states["a"].quarantined_until == until


# --- capacity floor -----------------------------------------------------------------------


def test_capacity_floor_holds_the_second_candidate_by_tag_order() -> None:
    fleet = Fleet(("a", "b", "c"), floor=2)
    first = fleet.round({"a": Verdict.fail, "b": Verdict.fail})
    assert first.quarantines == () and kinds(first, EventKind.floor_held) == []
    decision = fleet.round({"a": Verdict.fail, "b": Verdict.fail})
    # a: 2 failing rounds, b: 2 as well -> tie broken by tag name: a leaves, b is held
    assert [q.tag for q in decision.quarantines] == ["a"]
    [held] = kinds(decision, EventKind.floor_held)
    assert held.tag == "b" and held.detail["kept"] == "b"
    assert held.detail["usable"] == ["b", "c"] and held.detail["floor"] == 2
    assert held.detail["order"] == ["a", "b"]
    assert "below the capacity floor of 2" in held.detail["why"]
    assert quarantined_tags(fleet) == ["a"]


def test_capacity_floor_quarantines_the_longest_failing_first() -> None:
    states = {
        "a": failing("a", 1, evidence=(7,)),
        "b": failing("b", 2, evidence=(6, 7)),  # held last round
    }
    verdicts = {t: rv(t, Verdict.fail) for t in ("a", "b")} | {"c": rv("c", Verdict.passed)}
    decision = decide_model(
        MODEL, states, verdicts, look=Look.round(8, T0), now=T0, rules=ENFORCE, capacity_floor=2,
        listing=listing("a", "b", "c"),
    )  # fmt: skip
    # b failed 3 rounds in a row, a only 2: b leaves first although "a" sorts first
    assert [q.tag for q in decision.quarantines] == ["b"]
    assert ids(decision.quarantines[0].evidence) == (6, 7, 8)
    [held] = kinds(decision, EventKind.floor_held)
    assert held.tag == "a" and held.detail["order"] == ["b", "a"]
    assert held.detail["usable"] == ["a", "c"]


def test_the_same_round_gives_the_same_choice_whatever_the_input_order() -> None:
    def decide(order: tuple[str, ...]) -> tuple[list[str], list[str]]:
        states = {t: failing(t, 1) for t in order}
        verdicts = {t: rv(t, Verdict.fail) for t in order}
        d = decide_model(
            MODEL, states, verdicts, look=Look.round(2, T0), now=T0, rules=ENFORCE, capacity_floor=2,
            listing=listing(*order, "x"),
        )  # fmt: skip
        held = [e.tag or "" for e in kinds(d, EventKind.floor_held)]
        return [q.tag for q in d.quarantines], held

    assert decide(("c", "a", "b")) == decide(("b", "c", "a")) == (["a", "b"], ["c"])


def test_builtin_and_runtime_exclusions_count_toward_the_floor() -> None:
    fleet = Fleet(("a", "b", "c"), floor=2, other_excluded={"c"})
    _, second = fleet.run("a", "FF")
    assert second.quarantines == ()
    [held] = kinds(second, EventKind.floor_held)
    assert held.detail["usable"] == ["a", "b"]
    assert quarantined_tags(fleet) == []


def test_an_already_excluded_endpoint_is_quarantined_without_touching_the_floor() -> None:
    fleet = Fleet(("a", "b"), floor=2, other_excluded={"a"})
    _, second = fleet.run("a", "FF")
    assert [q.tag for q in second.quarantines] == ["a"]
    assert kinds(second, EventKind.floor_held) == []


def test_existing_quarantines_count_toward_the_floor() -> None:
    fleet = Fleet(("a", "b", "c", "d"), floor=2)
    fleet.run("a", "FF")
    for _ in range(2):  # a keeps failing, so it stays quarantined
        decision = fleet.round({"a": Verdict.fail, "b": Verdict.fail, "c": Verdict.fail})
    assert quarantined_tags(fleet) == ["a", "b"]
    assert [q.tag for q in decision.quarantines] == ["b"]
    assert [e.tag for e in kinds(decision, EventKind.floor_held)] == ["c"]


def test_a_held_candidate_is_quarantined_once_capacity_returns() -> None:
    fleet = Fleet(("a", "b", "c"), floor=2, other_excluded={"c"})
    fleet.run("a", "FF")
    fleet.other_excluded.clear()  # operator removes the runtime exclusion of c
    [decision] = fleet.run("a", "F")
    assert [q.tag for q in decision.quarantines] == ["a"]
    assert ids(decision.quarantines[0].evidence) == (1, 2, 3)


def test_a_held_candidate_alerts_once_per_streak_and_is_audited_every_round() -> None:
    fleet = Fleet(("a", "b", "c"), floor=2, other_excluded={"c"})
    decisions = fleet.run("a", "FFFF")
    held = [e for d in decisions for e in kinds(d, EventKind.floor_held)]
    assert [e.detail["alert"] for e in held] == [True, False, False]
    fleet.run("a", "P")  # the streak ends
    again = [e for d in fleet.run("a", "FF") for e in kinds(d, EventKind.floor_held)]
    assert [e.detail["alert"] for e in again] == [True]  # a new streak is said again


def test_a_held_candidate_alerts_again_for_another_contract_streak() -> None:
    fleet = Fleet(("a", "b", "c"), floor=2, other_excluded={"c"})
    fleet.run("a", "FF")  # schema
    from core_builders import cr

    from canary.core.model import Result, RoundVerdict

    both = RoundVerdict(
        MODEL, "a", Verdict.fail,
        (cr(Contract.schema, Result.fail), cr(Contract.ttft, Result.fail)),
    )  # fmt: skip
    fleet.round({"a": both})
    [held] = kinds(fleet.round({"a": both}), EventKind.floor_held)
    assert held.detail["alert"] is True and held.detail["causes"] == ["schema", "ttft"]
    [quiet] = kinds(fleet.round({"a": both}), EventKind.floor_held)
    assert quiet.detail["alert"] is False


# --- observe mode -------------------------------------------------------------------------


def test_observe_mode_reports_would_quarantine_once_and_never_quarantines() -> None:
    fleet = Fleet(rules=PolicyRules())
    decisions = fleet.run("a", "FFFFF")
    would = [e for d in decisions for e in kinds(d, EventKind.would_quarantine)]
    assert len(would) == 1 and would[0].tag == "a" and ids(would[0].evidence) == (1, 2)
    assert would[0].detail["floor_would_hold"] is False
    assert all(d.quarantines == () for d in decisions)
    assert all(kinds(d, EventKind.quarantine) == [] for d in decisions)
    assert fleet.state("a").quarantined_until is None and fleet.state("a").ladder_step == 0


def test_observe_mode_reports_a_new_streak_again() -> None:
    fleet = Fleet(rules=PolicyRules())
    decisions = fleet.run("a", "FFPFF")
    assert [len(kinds(d, EventKind.would_quarantine)) for d in decisions] == [0, 1, 0, 0, 1]


def test_observe_mode_says_when_the_floor_would_hold() -> None:
    fleet = Fleet(("a", "b"), rules=PolicyRules(), floor=2)
    _, second = fleet.run("a", "FF")
    [would] = kinds(second, EventKind.would_quarantine)
    assert would.detail["floor_would_hold"] is True and would.detail["causes"] == ["schema"]
    assert kinds(second, EventKind.floor_held) == []


# --- language, manual release, bookkeeping ------------------------------------------------


def test_language_anomaly_is_repeated_next_round_until_measured_clean() -> None:
    fleet = Fleet()
    fleet.round({"a": rv("a", Verdict.inconclusive, anomaly_in="pt")})
    assert fleet.state("a").next_language == "pt"
    fleet.round({"a": Verdict.transport_error})  # schema only, language not measured: kept
    assert fleet.state("a").next_language == "pt"
    fleet.round(skipped=("a",))
    assert fleet.state("a").next_language == "pt"
    clean = rv("a", Verdict.passed)
    from core_builders import cr

    from canary.core.model import Contract, Result

    measured = type(clean)(
        MODEL, "a", Verdict.passed, clean.results + (cr(Contract.language, Result.passed),)
    )
    fleet.round({"a": measured})
    assert fleet.state("a").next_language is None


def test_manual_release_keeps_the_ladder_position() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    before = fleet.state("a")
    state, end, event = release_manually(
        before, now=fleet.now, reason="fixed upstream", actor="ops"
    )
    assert end.why == "manual" and end.until == before.quarantined_until
    assert state.quarantined_until is None and state.quarantined_since is None
    assert state.ladder_step == 1 and state.last_quarantine_at == before.last_quarantine_at
    assert state.failing_streak == 0
    assert event.kind is EventKind.release and event.tag == "a"
    assert event.detail["why"] == "manual" and event.detail["actor"] == "ops"
    assert event.detail["reason"] == "fixed upstream"


def test_manual_release_of_a_free_endpoint_is_refused() -> None:
    with pytest.raises(NotQuarantined, match="b is not quarantined for acme/roleplay-1"):
        release_manually(EndpointState(MODEL, "b"), now=T0, reason="x", actor="ops")


def test_decision_returns_every_state_and_names_the_changed_ones() -> None:
    fleet = Fleet(("a", "b"))
    fleet.run("a", "F")
    assert set(fleet.decisions[0].states) == {"a", "b"}
    decision = fleet.round({"b": Verdict.transport_error, "a": Verdict.transport_error})
    assert decision.changed == ()
    decision = fleet.round({"b": Verdict.fail, "a": Verdict.transport_error})
    assert decision.changed == ("b",)


def test_quarantine_start_becomes_a_quarantine_layer_entry() -> None:
    fleet = Fleet()
    _, second = fleet.run("a", "FF")
    entry = second.quarantines[0].exclusion()
    assert entry.layer is Layer.quarantine and entry.tag == "a" and ids(entry.evidence) == (1, 2)
    assert entry.active(fleet.now) and not entry.active(entry.until or T0)
