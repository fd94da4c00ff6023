"""Store contract, decisions and exclusion layers: the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from canary.core.model import EndpointState, Event, EventKind, Layer
from canary.core.quarantine import QuarantineStart
from canary.store import NoActiveQuarantine, QuarantineEnd, Store, UnknownExclusion

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def _quarantine(store: Store, model: str, tag: str = "alpha", *, step: int = 1) -> EndpointState:
    """Store a state that has just been quarantined, the way the rounds would."""
    round_id = store.claim_round(model, T0 + timedelta(minutes=step), "r", "p-1", {})
    state = EndpointState(
        model,
        tag,
        failing_streak=2,
        quarantined_since=T0,
        quarantined_until=T0 + DAY,
        ladder_step=step,
        last_quarantine_at=T0,
        evidence=(7, 8),
    )
    start = QuarantineStart(model, tag, T0, T0 + DAY, step, "language: es in 4/6 sentences", (7, 8))
    event = Event(EventKind.quarantine, model, tag, {"until": (T0 + DAY).isoformat()}, (7, 8))
    ok = store.apply_decision(
        round_id=round_id,
        model=model,
        before=store.load_states(model),
        after={tag: state},
        events=[event],
        quarantines_started=[start],
        releases=[],
        actor="rounds",
        policy_version="p-1",
        at=T0,
    )
    assert ok
    return store.load_states(model)[tag]


def test_a_decision_writes_state_quarantine_and_audit_together(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    assert (
        stored.version == 1 and stored.evidence == (7, 8) and stored.quarantined_until == T0 + DAY
    )
    [active] = store.active_quarantines(model, T0 + timedelta(hours=1))
    assert active.layer is Layer.quarantine and active.tag == "alpha" and active.evidence == (7, 8)
    assert active.since == T0 and active.until == T0 + DAY and "language" in active.reason
    assert store.active_quarantines(model, T0 + DAY) == []  # over at its end
    [audit] = store.audit(model)
    assert (
        audit.event == "quarantine" and audit.evidence == (7, 8) and audit.policy_version == "p-1"
    )
    assert audit.round_id is not None and audit.actor == "rounds"


def test_a_version_conflict_rolls_back_the_whole_decision(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    before = {"alpha": stored}
    winner = replace(stored, passing_streak=1)
    assert store.apply_decision(
        round_id=None,
        model=model,
        before=before,
        after={"alpha": winner},
        events=[Event(EventKind.verdict, model, "alpha")],
        actor="a",
        policy_version="p-1",
        at=T0,
    )
    # A second decision made from the same stale read: it must leave no trace at all.
    loser = replace(stored, failing_streak=5)
    newcomer = EndpointState(model, "beta", failing_streak=1)
    ok = store.apply_decision(
        round_id=None,
        model=model,
        before=before,
        after={"beta": newcomer, "alpha": loser},
        events=[Event(EventKind.quarantine, model, "alpha", {"lost": True})],
        quarantines_started=[QuarantineStart(model, "alpha", T0, T0 + 3 * DAY, 2, "lost", ())],
        releases=[QuarantineEnd(model, "alpha", "recovered")],
        actor="b",
        policy_version="p-1",
        at=T0,
    )
    assert ok is False
    states = store.load_states(model)
    assert set(states) == {"alpha"}  # beta's insert was rolled back with the rest
    assert states["alpha"].passing_streak == 1 and states["alpha"].failing_streak == 2
    assert states["alpha"].version == 2
    assert [q.until for q in store.quarantines(model, active_only=False)] == [T0 + DAY]
    assert store.quarantines(model)[0].released_at is None
    assert [a.event for a in store.audit(model)] == ["verdict", "quarantine"]
    assert not any(a.detail.get("lost") for a in store.audit(model))


def test_two_first_decisions_for_a_new_endpoint_cannot_both_insert(
    store: Store, model: str
) -> None:
    new = EndpointState(model, "alpha", failing_streak=1)
    first = store.apply_decision(
        round_id=None,
        model=model,
        before={},
        after={"alpha": new},
        events=[Event(EventKind.verdict, model, "alpha")],
        actor="a",
        policy_version="p-1",
        at=T0,
    )
    second = store.apply_decision(
        round_id=None,
        model=model,
        before={},
        after={"alpha": new},
        events=[Event(EventKind.verdict, model, "alpha")],
        actor="b",
        policy_version="p-1",
        at=T0,
    )
    assert (first, second) == (True, False)
    assert len(store.audit(model)) == 1


def test_unchanged_states_are_not_rewritten(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    assert store.apply_decision(
        round_id=None,
        model=model,
        before={"alpha": stored},
        after={"alpha": stored},
        events=[],
        actor="a",
        policy_version="p-1",
        at=T0,
    )
    assert store.load_states(model)["alpha"].version == 1


def test_a_release_closes_the_quarantine_row(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    released = replace(stored, quarantined_since=None, quarantined_until=None, passing_streak=0)
    assert store.apply_decision(
        round_id=None,
        model=model,
        before={"alpha": stored},
        after={"alpha": released},
        events=[Event(EventKind.release, model, "alpha", {"why": "recovered"})],
        releases=[QuarantineEnd(model, "alpha", "recovered", at=T0 + timedelta(hours=2))],
        actor="rounds",
        policy_version="p-1",
        at=T0 + timedelta(hours=3),
    )
    [row] = store.quarantines(model, active_only=False)
    assert row.released_at == T0 + timedelta(hours=2) and row.release_why == "recovered"
    assert store.active_quarantines(model, T0 + timedelta(hours=4)) == []


def test_manual_release_keeps_the_ladder_and_is_audited(store: Store, model: str) -> None:
    _quarantine(store, model, step=2)
    now = T0 + timedelta(hours=5)
    assert store.release_quarantine(model, "alpha", "alice", "false positive", now) is True
    state = store.load_states(model)["alpha"]
    assert state.quarantined_until is None and state.quarantined_since is None
    assert state.ladder_step == 2 and state.last_quarantine_at == T0
    assert state.failing_streak == 0 and state.version == 2
    [row] = store.quarantines(model, active_only=False)
    assert row.release_why == "manual" and row.released_at == now
    latest = store.audit(model)[0]
    assert latest.event == "release" and latest.actor == "alice"
    assert latest.detail["why"] == "manual" and latest.detail["reason"] == "false positive"
    with pytest.raises(NoActiveQuarantine):
        store.release_quarantine(model, "alpha", "alice", "again", now)


def test_runtime_exclusions_are_added_and_removed_with_audit(store: Store, model: str) -> None:
    forever = store.add_exclusion(model, "alpha", "contract dispute", "bob", None, T0)
    brief = store.add_exclusion(model, "beta", "maintenance", "bob", T0 + DAY, T0)
    active = store.active_exclusions(model, T0 + timedelta(hours=1))
    assert [(e.tag, e.layer, e.id) for e in active] == [
        ("alpha", Layer.runtime, forever),
        ("beta", Layer.runtime, brief),
    ]
    assert [e.tag for e in store.active_exclusions(model, T0 + DAY)] == ["alpha"]  # beta expired
    removed = store.remove_exclusion(forever, "carol", "resolved", T0 + timedelta(hours=2))
    assert removed.tag == "alpha" and removed.reason == "contract dispute"
    assert [e.tag for e in store.active_exclusions(model, T0 + timedelta(hours=3))] == ["beta"]
    [row] = [r for r in store.exclusion_rows(model, active_only=False) if r.id == forever]
    assert row.removed_by == "carol" and row.remove_reason == "resolved"
    events = [(a.event, a.actor, a.tag) for a in store.audit(model)]
    assert events == [
        ("exclusion_removed", "carol", "alpha"),
        ("exclusion_added", "bob", "beta"),
        ("exclusion_added", "bob", "alpha"),
    ]
    with pytest.raises(UnknownExclusion):
        store.remove_exclusion(forever, "carol", "twice", T0)
