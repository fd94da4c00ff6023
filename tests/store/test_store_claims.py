"""Claims on a slot's rounds, heartbeats, reclaiming a dead claimer's round, the day's budget:
the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from builders import round_of
from racing import race

from canary.core.events import event_of
from canary.core.model import Contract, EndpointState, EventKind, Streak
from canary.rounds.budget import DayBudget
from canary.store import Store
from canary.store._claims import RoundLost

T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=90)


def _claim(store: Store, model: str, holder: str, at: datetime) -> int | None:
    return store.claim_round(model, T0, holder, "p-1", {}, started_at=at, lost_before=at - TTL)


def test_a_slot_is_claimed_once_while_its_claimer_beats(store: Store, model: str) -> None:
    first = _claim(store, model, "one", T0)
    assert first is not None
    assert _claim(store, model, "two", T0 + timedelta(seconds=60)) is None
    assert store.heartbeat_round(first, "one", T0 + timedelta(seconds=80))
    assert _claim(store, model, "two", T0 + timedelta(seconds=160)) is None  # beat 80 s ago
    assert store.heartbeat_round(first, "two", T0) is False  # not its round


def test_a_dead_claimers_round_is_abandoned_and_claimed_again(store: Store, model: str) -> None:
    dead = _claim(store, model, "one", T0)
    assert dead is not None
    later = T0 + TTL + timedelta(seconds=1)
    again = _claim(store, model, "two", later)
    assert again is not None and again != dead
    old = round_of(store, dead)
    assert old.status == "abandoned" and old.detail == {"why": "claimer lost"}
    assert store.live_rounds([model], T0)[model].id == again
    # the dead claimer, should it wake up, can neither beat, decide nor end the round
    assert store.heartbeat_round(dead, "one", later) is False
    with pytest.raises(RoundLost):
        store.finish_round(dead, "finished", at=later, holder="one")
    state = EndpointState(model, "a", streaks=(Streak(Contract.ttft, 1, later),))
    with pytest.raises(RoundLost):
        store.apply_decision(
            round_id=dead, model=model, before={}, after={"a": state}, events=[],
            actor="canary", policy_version="p-1", at=later, holder="one",
        )  # fmt: skip
    assert store.load_states(model) == {}
    store.finish_round(again, "finished", at=later, holder="two")
    assert _claim(store, model, "three", later + TTL * 3) is None  # finished: not claimable


def test_the_days_budget_is_reserved_by_compare_and_set(store: Store, model: str) -> None:
    day = f"2026-04-{len(model) % 27 + 1:02d}"
    assert store.budget_reserved(day, spent=0.5) == 0.5  # the row starts at what was spent
    assert store.budget_reserved(day, spent=9.0) == 0.5  # once
    assert store.reserve_budget(day, 0.5, 0.25)
    assert not store.reserve_budget(day, 0.5, 0.25)  # someone reserved in between
    assert store.budget_reserved(day, 0.0) == 0.75
    store.release_budget(day, 0.1)
    assert store.budget_reserved(day, 0.0) == pytest.approx(0.65)


def test_the_days_budget_alert_is_recorded_once_with_its_audit_row(
    store: Store, model: str
) -> None:
    day = "2026-05-02"
    store.budget_reserved(day, 0.0)  # the round reserved from the day's row first
    event = event_of(EventKind.budget, model, None, {"skipped": ["a"], "alert": True}, ())
    last = store.last_budget_alert()
    at = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)

    def record(decided_on: datetime | None) -> bool:
        return store.record_budget_alert(
            day, event, last_alert_at=decided_on, actor="canary", policy_version="p-1", at=at
        )

    assert record(last)
    assert not record(last)  # another replica decided on the same last alert: nothing written
    assert store.last_budget_alert() == at
    [row] = store.audit(model, events=["budget"])
    assert row.at == at and row.actor == "canary" and row.policy_version == "p-1"


class DecideTogether:
    """The real store, except that each replica's first read of the last budget alert returns
    only once every replica has read it: all decide on the same last alert, then race to record
    it (without this, threads started together still mostly run one after the other)."""

    def __init__(self, store: Store, barrier: threading.Barrier) -> None:
        self._store = store
        self._barrier = barrier
        self._first = True

    def last_budget_alert(self) -> datetime | None:
        last = self._store.last_budget_alert()
        if self._first:
            self._first = False
            self._barrier.wait(timeout=30)
        return last

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_replicas_racing_for_the_days_budget_alert_record_it_once(store: Store, model: str) -> None:
    day = "2026-05-03"
    store.budget_reserved(day, 0.0)
    now = datetime(2026, 5, 3, 10, 0, tzinfo=UTC)
    skipped = [("rest-a", "budget: not sampled")]
    replicas = 4
    together = threading.Barrier(replicas)

    def replica(i: int) -> bool:
        seen = cast(Store, DecideTogether(store, together))
        budget = DayBudget(seen, 1.0, day, 0.0)
        sent = budget.alert(model, skipped, now, actor=f"replica-{i}", policy_version="p-1")
        return sent is not None

    assert sorted(race(replicas, replica)) == [False] * (replicas - 1) + [True]
    assert len(store.audit(model, events=["budget"])) == 1
