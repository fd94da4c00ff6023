"""Store contract, decisions and exclusion layers: the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from canary.core.events import event_of
from canary.core.model import (
    Contract,
    Endpoint,
    EndpointState,
    EventKind,
    Exclusion,
    Layer,
    Look,
    Pricing,
    Streak,
)
from canary.core.quarantine import QuarantineEnd, QuarantineStart
from canary.store import FloorRefused, NoActiveQuarantine, Store, UnknownExclusion

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
LOOKS = (Look.round(7, T0 - timedelta(minutes=30)), Look.round(8, T0))


def _quarantine(store: Store, model: str, tag: str = "alpha", *, step: int = 1) -> EndpointState:
    """Store a state that has just been quarantined, the way the rounds would."""
    round_id = store.claim_round(model, T0 + timedelta(minutes=step), "r", "p-1", {})
    state = EndpointState(
        model,
        tag,
        streaks=(Streak(Contract.language, 2, T0, LOOKS),),
        quarantined_since=T0,
        quarantined_until=T0 + DAY,
        causes=("language",),
        ladder_step=step,
        last_quarantine_at=T0,
    )
    start = QuarantineStart(
        model, tag, T0, T0 + DAY, step, "language: es in 4/6 sentences", LOOKS, ("language",)
    )
    event = event_of(EventKind.quarantine, model, tag, {"until": (T0 + DAY).isoformat()}, LOOKS)
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
    assert stored.version == 1 and stored.quarantined_until == T0 + DAY
    assert stored.streaks == (Streak(Contract.language, 2, T0, LOOKS),)
    assert stored.causes == ("language",)
    [row] = store.quarantines(model)
    assert row.causes == ("language",) and row.withheld_at is None
    [active] = store.active_quarantines(model, T0 + timedelta(hours=1))
    assert active.layer is Layer.quarantine and active.tag == "alpha" and active.evidence == LOOKS
    assert active.since == T0 and active.until == T0 + DAY and "language" in active.reason
    assert store.active_quarantines(model, T0 + DAY) == []  # over at its end
    [audit] = store.audit(model)
    assert audit.event == "quarantine" and audit.evidence == LOOKS and audit.policy_version == "p-1"
    assert audit.round_id is not None and audit.actor == "rounds"


def test_a_version_conflict_rolls_back_the_whole_decision(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    before = {"alpha": stored}
    winner = replace(stored, recovery_streak=1)
    assert store.apply_decision(
        round_id=None,
        model=model,
        before=before,
        after={"alpha": winner},
        events=[event_of(EventKind.verdict, model, "alpha", {}, ())],
        actor="a",
        policy_version="p-1",
        at=T0,
    )
    # A second decision made from the same stale read: it must leave no trace at all.
    loser = replace(stored, streaks=(Streak(Contract.ttft, 5, T0),))
    newcomer = EndpointState(model, "beta", streaks=(Streak(Contract.ttft, 1, T0),))
    ok = store.apply_decision(
        round_id=None,
        model=model,
        before=before,
        after={"beta": newcomer, "alpha": loser},
        events=[event_of(EventKind.quarantine, model, "alpha", {"reason": "lost"}, ())],
        quarantines_started=[QuarantineStart(model, "alpha", T0, T0 + 3 * DAY, 2, "lost", ())],
        releases=[QuarantineEnd(model, "alpha", T0, T0 + DAY, T0, "recovered")],
        actor="b",
        policy_version="p-1",
        at=T0,
    )
    assert ok is False
    states = store.load_states(model)
    assert set(states) == {"alpha"}  # beta's insert was rolled back with the rest
    assert states["alpha"].recovery_streak == 1 and states["alpha"].failing_streak == 2
    assert states["alpha"].version == 2
    assert [q.until for q in store.quarantines(model, active_only=False)] == [T0 + DAY]
    assert store.quarantines(model)[0].released_at is None
    assert [a.event for a in store.audit(model)] == ["verdict", "quarantine"]
    assert not any(a.detail.get("reason") == "lost" for a in store.audit(model))


def test_two_first_decisions_for_a_new_endpoint_cannot_both_insert(
    store: Store, model: str
) -> None:
    new = EndpointState(model, "alpha", streaks=(Streak(Contract.ttft, 1, T0),))
    first = store.apply_decision(
        round_id=None,
        model=model,
        before={},
        after={"alpha": new},
        events=[event_of(EventKind.verdict, model, "alpha", {}, ())],
        actor="a",
        policy_version="p-1",
        at=T0,
    )
    second = store.apply_decision(
        round_id=None,
        model=model,
        before={},
        after={"alpha": new},
        events=[event_of(EventKind.verdict, model, "alpha", {}, ())],
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
    released = replace(stored, quarantined_since=None, quarantined_until=None, recovery_streak=0)
    assert store.apply_decision(
        round_id=None,
        model=model,
        before={"alpha": stored},
        after={"alpha": released},
        events=[event_of(EventKind.release, model, "alpha", {"why": "recovered"}, ())],
        releases=[
            QuarantineEnd(model, "alpha", T0, T0 + DAY, T0 + timedelta(hours=2), "recovered")
        ],
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
    end = store.release_quarantine(model, "alpha", "alice", "false positive", now)
    assert end.why == "manual" and end.at == now and end.until == T0 + DAY
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


def _exclude(store: Store, model: str, tag: str, *, until: datetime | None = None,
             floor: int = 0, force: bool = False, at: datetime = T0) -> int:  # fmt: skip
    added = store.add_exclusion(
        model, tag, f"reason {tag}", "bob", until, at, builtin=(), floor=floor, force=force
    )
    return added.id


def _list(store: Store, model: str, *tags: str, at: datetime = T0) -> None:
    endpoints = [Endpoint(model, t, t.title(), Pricing(0.0, 0.0)) for t in tags]
    store.record_snapshots(None, model, endpoints, at)


def test_runtime_exclusions_are_added_and_removed_with_audit(store: Store, model: str) -> None:
    _list(store, model, "alpha", "beta", "gamma")
    forever = store.add_exclusion(
        model, "alpha", "contract dispute", "bob", None, T0, builtin=(), floor=0
    ).id
    brief = _exclude(store, model, "beta", until=T0 + DAY)
    active = store.active_exclusions(model, T0 + timedelta(hours=1))
    assert [(e.tag, e.layer, e.id) for e in active] == [
        ("alpha", Layer.runtime, forever),
        ("beta", Layer.runtime, brief),
    ]
    assert [e.tag for e in store.active_exclusions(model, T0 + DAY)] == ["alpha"]  # beta expired
    removed = store.remove_exclusion(forever, "carol", "resolved", T0 + timedelta(hours=2))
    assert removed.tag == "alpha" and removed.reason == "contract dispute"
    assert [e.tag for e in store.active_exclusions(model, T0 + timedelta(hours=3))] == ["beta"]
    [gone] = store.audit(model, events=["exclusion_removed"])
    assert gone.actor == "carol" and gone.detail["reason"] == "resolved"
    assert gone.detail["id"] == forever
    events = [(a.event, a.actor, a.tag) for a in store.audit(model)]
    assert events == [
        ("exclusion_removed", "carol", "alpha"),
        ("exclusion_added", "bob", "beta"),
        ("exclusion_added", "bob", "alpha"),
    ]
    with pytest.raises(UnknownExclusion):
        store.remove_exclusion(forever, "carol", "twice", T0)


def test_an_exclusion_below_the_floor_is_refused_and_writes_nothing(
    store: Store, model: str
) -> None:
    _list(store, model, "alpha", "beta", "gamma")
    _exclude(store, model, "alpha", floor=2)
    with pytest.raises(FloorRefused, match=r"leaves 1 usable endpoint\(s\).*floor of 2"):
        _exclude(store, model, "beta", floor=2)
    assert [e.tag for e in store.active_exclusions(model, T0)] == ["alpha"]
    assert [a.event for a in store.audit(model)] == ["exclusion_added"]
    assert store.floor_episodes(model) == []


def test_a_base_slug_exclusion_is_weighed_on_every_endpoint_it_names(
    store: Store, model: str
) -> None:
    _list(store, model, "deepinfra/fp8", "deepinfra/turbo", "alpha")
    with pytest.raises(FloorRefused):
        _exclude(store, model, "deepinfra", floor=2)


def test_a_forced_exclusion_below_the_floor_opens_one_episode_by_its_author(
    store: Store, model: str
) -> None:
    _list(store, model, "alpha", "beta")
    first = _exclude(store, model, "alpha", floor=2, force=True)
    _exclude(store, model, "beta", floor=2, force=True)
    [episode] = store.floor_episodes(model)
    assert episode.opened_by == "bob" and episode.open
    assert episode.detail["action"] == {
        "event": "exclusion_added", "exclusion_id": first, "tag": "alpha", "force": True,
        "actor": "bob",
    }  # fmt: skip
    events = [a.event for a in store.audit(model)]
    assert events.count("floor_breached") == 1 and events.count("exclusion_added") == 2
    [added] = [a for a in store.audit(model) if a.event == "exclusion_added" and a.tag == "alpha"]
    assert added.detail["force"] is True and added.detail["usable_after"] == 1


def test_before_the_first_listing_an_exclusion_needs_force(store: Store, model: str) -> None:
    with pytest.raises(FloorRefused, match="not been listed yet"):
        _exclude(store, model, "alpha", floor=2)
    _exclude(store, model, "alpha", floor=2, force=True)
    assert store.floor_episodes(model) == []  # nothing known of the capacity: no episode


def test_a_decision_made_before_an_operator_changed_the_layers_is_refused(
    store: Store, model: str
) -> None:
    _list(store, model, "alpha", "beta", "gamma")
    guard = store.guard_version(model)
    _exclude(store, model, "alpha", floor=2)
    state = EndpointState(model, "beta", streaks=(Streak(Contract.ttft, 1, T0),))
    ok = store.apply_decision(
        round_id=None, model=model, before={}, after={"beta": state}, events=[],
        actor="canary", policy_version="p-1", at=T0, guard=guard,
    )  # fmt: skip
    assert ok is False and store.load_states(model) == {}
    assert store.apply_decision(
        round_id=None, model=model, before={}, after={"beta": state}, events=[],
        actor="canary", policy_version="p-1", at=T0, guard=store.guard_version(model),
    )  # fmt: skip


def test_floor_changes_are_recorded_once_whoever_applies_them(store: Store, model: str) -> None:
    stored = _quarantine(store, model)
    _list(store, model, "alpha", "beta")
    now = T0 + timedelta(minutes=5)
    # a floor of 3 over two listed endpoints: alpha is withheld, and the floor is still breached
    written = store.sync_floor(model, (), 3, now, "canary", "p-1")
    assert sorted(e.kind for e in written) == [EventKind.floor_breached, EventKind.floor_held]
    assert store.sync_floor(model, (), 3, now, "replica-2", "p-1") == []
    assert store.quarantines(model)[0].withheld_at == now
    assert [e.model for e in store.floor_episodes(model)] == [model]
    assert stored.quarantined(now)
    written = store.sync_floor(model, (), 1, now, "canary", "p-1")
    assert sorted(e.kind for e in written) == [EventKind.floor_restored, EventKind.republished]
    assert store.sync_floor(model, (), 1, now, "canary", "p-1") == []
    [episode] = store.floor_episodes(model)
    assert episode.closed_at == now and store.quarantines(model)[0].withheld_at is None
    kinds = [a.event for a in store.audit(model)]
    assert kinds.count("floor_breached") == 1 and kinds.count("floor_restored") == 1


def test_model_layers_reads_listing_layers_and_the_floor_record(store: Store, model: str) -> None:
    _quarantine(store, model)
    _list(store, model, "alpha", "beta")
    _exclude(store, model, "beta", floor=0)
    layers = store.model_layers([model], T0 + timedelta(hours=1))[model]
    assert [e.tag for e in layers.listing or ()] == ["alpha", "beta"]
    assert [e.tag for e in layers.runtime] == ["beta"]
    assert [e.tag for e in layers.quarantines] == ["alpha"]
    assert layers.record.withheld == {} and layers.record.episode_open is False
    published = layers.publish(model, [Exclusion(model, "x", Layer.builtin, "b")], 1, T0)
    assert published.usable == ("alpha",) and published.withheld == (
        layers.quarantines[0],
    )  # fmt: skip
