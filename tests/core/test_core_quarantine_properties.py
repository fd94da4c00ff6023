"""Properties of the state machine over random verdict sequences (one endpoint, ample capacity)."""

from __future__ import annotations

from datetime import timedelta

from core_builders import Fleet
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.core.model import Contract, EventKind

letters = st.lists(
    st.tuples(st.sampled_from("FPTIS"), st.sampled_from([0, 0, 0, 1, 30, 200])), max_size=30
)


@settings(max_examples=examples(150), deadline=None)
@given(letters)
def test_quarantine_needs_two_conclusive_failures_in_a_row(steps: list[tuple[str, int]]) -> None:
    fleet = Fleet()
    conclusive: list[str] = []  # conclusive verdicts since the last quarantine change
    until = None
    for letter, hours in steps:
        fleet.advance(timedelta(hours=hours))
        was_quarantined = fleet.state("a").quarantined(fleet.now)
        before = fleet.state("a")
        [decision] = fleet.run("a", letter)
        after = fleet.state("a")
        events = {e.kind for e in decision.events if e.tag == "a"}
        released = [r for r in decision.releases if r.tag == "a"]
        if released:
            conclusive = []
            until = None
        if letter in "FP":
            conclusive.append(letter)
        if EventKind.quarantine in events:
            assert letter == "F" and conclusive[-2:] == ["F", "F"]
            assert not was_quarantined or released
            conclusive = []
            until = after.quarantined_until
        if letter in "TIS":
            # no evidence: nothing moves but the clock (expiry) and the pending language
            assert EventKind.quarantine not in events
            assert all(r.why == "expired" for r in released)
            if not released:
                assert after.recovery_streak == before.recovery_streak
                old = before.streak(Contract.schema).last_fail_at
                aged = old is not None and fleet.at - old > fleet.rules.streak_max_age
                assert after.failing_streak == (0 if aged else before.failing_streak)
        if until is not None and after.quarantined_until is not None:
            assert after.quarantined_until >= until  # never shortened
        if EventKind.quarantine in events:
            [q] = decision.quarantines
            assert q.until - q.since in {timedelta(days=d) for d in (1, 3, 7)}
