"""Store contract, the notification outbox and the leader lease, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from racing import race

from canary.core.events import ModelWide, QuarantineStarted, event_of
from canary.core.model import Contract, EventKind, Look
from canary.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LOOKS = (Look.round(1, T0 - timedelta(minutes=30)), Look.round(2, T0))


def test_the_outbox_hands_out_pending_rows_of_the_asked_kinds(store: Store, model: str) -> None:
    q = store.record_audit(
        event_of(EventKind.quarantine, model, "alpha", {"reason": "x"}, LOOKS), "rounds", "p-1", T0
    )
    store.record_audit(event_of(EventKind.verdict, model, "alpha", {}, ()), "rounds", "p-1", T0)
    claimed = store.pending_notifications(T0, 10, {"quarantine", "release"})
    assert [(r.id, r.event, r.evidence) for r in claimed if r.model == model] == [
        (q, "quarantine", LOOKS)
    ]
    assert store.pending_notifications(T0, 10, {"quarantine"}) == []  # claimed
    store.mark_notified(q, T0 + timedelta(seconds=1))
    later = T0 + timedelta(hours=1)
    assert [
        r for r in store.pending_notifications(later, 10, {"quarantine"}) if r.model == model
    ] == []
    [row] = [a for a in store.audit(model) if a.id == q]
    assert row.notified_at == T0 + timedelta(seconds=1) and row.notify_attempts == 1


def test_a_failed_notification_waits_for_its_next_attempt(store: Store, model: str) -> None:
    a = store.record_audit(
        event_of(EventKind.floor_held, model, "alpha", {}, ()), "rounds", "p-1", T0
    )
    [claimed] = [r for r in store.pending_notifications(T0, 10, {"floor_held"}) if r.model == model]
    store.mark_notify_failed(claimed.id, T0 + timedelta(minutes=5))
    assert [
        r
        for r in store.pending_notifications(T0 + timedelta(minutes=4), 10, {"floor_held"})
        if r.model == model
    ] == []
    [again] = [
        r
        for r in store.pending_notifications(T0 + timedelta(minutes=5), 10, {"floor_held"})
        if r.model == model
    ]
    assert again.id == a and again.notify_attempts == 1


def test_a_claim_that_is_never_marked_comes_back_after_it_runs_out(
    store: Store, model: str
) -> None:
    store.record_audit(event_of(EventKind.drift, model, "alpha", {}, ()), "drift", None, T0)
    assert len(store.pending_notifications(T0, 10, {"drift"}, claim_s=60)) == 1
    assert store.pending_notifications(T0 + timedelta(seconds=59), 10, {"drift"}, claim_s=60) == []
    assert (
        len(store.pending_notifications(T0 + timedelta(seconds=60), 10, {"drift"}, claim_s=60)) == 1
    )


def test_two_notifiers_never_claim_the_same_row(store: Store, model: str) -> None:
    ids = {
        store.record_audit(
            event_of(EventKind.model_wide, model, None, {"failing": i}, ()), "r", "p-1", T0
        )
        for i in range(40)
    }
    batches = race(
        2, lambda _i: [r.id for r in store.pending_notifications(T0, 25, {"model_wide"})]
    )
    claimed = [i for batch in batches for i in batch]
    assert len(claimed) == len(set(claimed))  # disjoint
    assert set(claimed) == ids  # and together they took everything


def test_the_lease_is_held_until_it_expires_then_taken_over(store: Store, model: str) -> None:
    name = f"rounds:{model}"
    assert store.try_acquire_lease(name, "a", T0, 60)
    assert store.try_acquire_lease(name, "a", T0 + timedelta(seconds=30), 60)  # ours: extended
    held = store.lease(name)
    assert (
        held is not None
        and held.acquired_at == T0
        and held.expires_at == T0 + timedelta(seconds=90)
    )
    assert not store.try_acquire_lease(name, "b", T0 + timedelta(seconds=60), 60)
    assert store.try_acquire_lease(name, "b", T0 + timedelta(seconds=90), 60)  # a's expired
    lease = store.lease(name)
    assert (
        lease is not None
        and lease.holder == "b"
        and lease.expires_at == T0 + timedelta(seconds=150)
    )
    assert not store.renew_lease(name, "a", T0 + timedelta(seconds=95), 60)
    assert store.renew_lease(name, "b", T0 + timedelta(seconds=95), 60)
    assert not store.release_lease(name, "a")
    assert store.release_lease(name, "b")
    assert store.try_acquire_lease(name, "a", T0 + timedelta(seconds=96), 60)  # free again


def test_racing_holders_exactly_one_wins_each_lease(store: Store, model: str) -> None:
    names = [f"race:{model}:{i}" for i in range(10)]
    for name in names:
        winners = race(
            4,
            lambda i, name=name: (
                f"holder-{i}" if store.try_acquire_lease(name, f"holder-{i}", T0, 60) else ""
            ),
        )
        assert len([w for w in winners if w]) == 1
        lease = store.lease(name)
        assert lease is not None and lease.holder in winners


def test_audit_details_keep_times_and_enums_as_json(store: Store, model: str) -> None:
    until = T0 + timedelta(days=1)
    event = ModelWide(model=model, contract=Contract.schema, tags=("a", "b"))
    audit_id = store.record_audit(event, "r", "p-1", T0)
    [row] = [a for a in store.audit(model) if a.id == audit_id]
    assert row.detail == {
        "contract": "schema",
        "failing": 0,
        "total": 0,
        "tags": ["a", "b"],
        "why": "",
    }
    assert row.decided == event
    started = QuarantineStarted(model=model, tag="alpha", until=until, causes=("schema",))
    audit_id = store.record_audit(started, "r", "p-1", T0)
    [row] = [a for a in store.audit(model) if a.id == audit_id]
    assert row.detail["until"] == "2026-03-02T12:00:00Z" and row.decided == started
