"""Maintenance windows: an endpoint in one is probed, but its results decide nothing until the
window ends; it stays usable capacity and is left out of the model-wide rule."""

from __future__ import annotations

from datetime import timedelta

from core_builders import ENFORCE, INTERVAL, MODEL, OBSERVE, T0, Fleet, cr, window
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.core.drift import DriftChange, quieted
from canary.core.identity import Listed
from canary.core.model import Contract, EventKind, Result, Verdict
from canary.core.policy import PolicyRules
from canary.core.verdict import judge_round

F = Verdict.fail
LETTERS = {"F": F, "P": Verdict.passed, "T": Verdict.transport_error, "I": Verdict.inconclusive}


def test_failing_rounds_in_a_window_move_nothing_and_counting_resumes_at_its_end() -> None:
    fleet = Fleet()
    fleet.round({"a": F})  # one failing round before the window
    end = fleet.now + 2 * INTERVAL
    for _ in range(2):
        decision = fleet.round({"a": F}, maintenance=[window("a", end)])
        assert [e for e in decision.events if e.tag == "a"] == []
        assert fleet.state("a").failing_streak == 1
    assert fleet.now == end  # the window has ended by itself: "a" is judged again
    decision = fleet.round({"a": F}, maintenance=[window("a", end)])
    assert [q.tag for q in decision.quarantines] == ["a"]


def test_a_quarantine_in_force_stays_through_passing_rounds_and_still_ends_on_time() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    until = fleet.state("a").quarantined_until
    assert until is not None
    maintenance = [window("a", until + timedelta(days=1))]
    for _ in range(3):  # passing rounds that would release it early outside a window
        decision = fleet.round(maintenance=maintenance)
        assert decision.releases == () and fleet.state("a").recovery_streak == 0
    fleet.now = until
    decision = fleet.round(maintenance=maintenance)
    assert [(r.tag, r.why) for r in decision.releases] == [("a", "expired")]


def test_a_slug_window_freezes_every_endpoint_of_the_provider_which_stays_capacity() -> None:
    fleet = Fleet(("a", "a/fp8", "b", "c"), floor=3)
    later = T0 + timedelta(days=1)
    maintenance = [window("a", later), window("c", later, model="other/model")]
    for _ in range(2):
        decision = fleet.round({"a": F, "a/fp8": F, "b": F, "c": F}, maintenance=maintenance)
    # four usable endpoints with "a" and "a/fp8" among them: "b" leaves, three remain, and "c"
    # (its window is another model's) is held by the floor
    assert [q.tag for q in decision.quarantines] == ["b"]
    assert [e.tag for e in decision.events if e.kind is EventKind.floor_held] == ["c"]
    assert fleet.state("a").failing_streak == fleet.state("a/fp8").failing_streak == 0


def test_an_endpoint_in_a_window_is_left_out_of_the_model_wide_rule() -> None:
    results = {
        "a": [cr(Contract.schema, Result.fail)],
        "b": [cr(Contract.schema, Result.fail)],
        "c": [cr(Contract.schema, Result.passed)],
    }
    wide = judge_round(MODEL, results, positive_controls=(), rules=ENFORCE)
    assert [e.kind for e in wide.events] == [EventKind.model_wide]
    assert wide.verdicts["a"].verdict is Verdict.inconclusive
    out = judge_round(MODEL, results, positive_controls=(), rules=ENFORCE, maintenance={"b"})
    assert out.events == () and out.verdicts["a"].verdict is Verdict.fail


def test_drift_of_an_endpoint_in_a_window_is_recorded_but_alerts_nobody() -> None:
    tags = ("a/fp8", "a/flex", "b", "gone")
    changes = [DriftChange(MODEL, t, "served_model", "x", "y", True, "r") for t in tags]
    listing = (Listed("a/fp8"), Listed("a/flex", service_tier="flex"), Listed("b"))
    windows = [window("a", T0 + timedelta(hours=1)), window("gone", T0 + timedelta(hours=1))]
    # a slug names no service-tier endpoint; one that left the listing is named by its tag
    assert [(c.tag, c.alert) for c in quieted(changes, windows, listing, T0)] == [
        ("a/fp8", False), ("a/flex", True), ("b", True), ("gone", False),
    ]  # fmt: skip
    assert quieted(changes, windows, listing, T0 + timedelta(hours=1)) == tuple(changes)


steps = st.lists(
    st.tuples(st.sampled_from("FPTI"), st.booleans(), st.sampled_from([0, 0, 1, 30])),
    max_size=30,
)


@settings(max_examples=examples(150), deadline=None)
@given(steps, st.sampled_from([ENFORCE, OBSERVE]))
def test_no_endpoint_in_a_window_is_moved_by_its_results(
    sequence: list[tuple[str, bool, int]], rules: PolicyRules
) -> None:
    fleet = Fleet(rules=rules)
    for letter, inside, hours in sequence:
        fleet.advance(timedelta(hours=hours))
        # outside, a window that ended right now: it names "a" but is no longer in force
        maintenance = [window("a", fleet.now + (INTERVAL if inside else timedelta()))]
        before = fleet.state("a")
        decision = fleet.round({"a": LETTERS[letter]}, maintenance=maintenance)
        if not inside:
            continue
        after = fleet.state("a")
        assert {e.kind for e in decision.events if e.tag == "a"} <= {EventKind.release}
        assert all(r.why == "expired" for r in decision.releases if r.tag == "a")
        assert "a" not in {q.tag for q in decision.quarantines}
        assert all(s.count <= before.streak(s.contract).count for s in after.streaks)
        if after.quarantined(fleet.at):
            assert after.quarantined_until == before.quarantined_until
            assert after.recovery_streak == before.recovery_streak
