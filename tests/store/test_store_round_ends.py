"""How a round ends when replicas share a slot: a decided round is finished in its decision's
transaction and nothing abandons it; a lost round can write nothing; a heartbeat of a finished
round is not a loss; one slot counts once per endpoint. The same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from builders import round_of

from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Look,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Streak,
    Transport,
    Verdict,
)
from canary.store import DriftChange, Store
from canary.store._claims import RoundLost
from canary.store.rows import SlotAlreadyCounted

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=90)
LATER = T0 + TTL + timedelta(seconds=1)  # past the lease TTL of a claim made at T0


def _claim(store: Store, model: str, holder: str, at: datetime, slot: datetime = T0) -> int:
    rid = store.claim_round(model, slot, holder, "p-1", {}, started_at=at, lost_before=at - TTL)
    assert rid is not None
    return rid


def _failing(model: str, at: datetime, *evidence: int) -> EndpointState:
    looks = tuple(Look.round(r, at) for r in evidence)
    return EndpointState(model, "alpha", streaks=(Streak(Contract.ttft, 1, at, looks),))


def _decide(
    store: Store, model: str, rid: int, after: EndpointState, *, holder: str | None
) -> bool:
    return store.apply_decision(
        round_id=rid, model=model, before=store.load_states(model), after={"alpha": after},
        events=[], actor="canary", policy_version="p-1", at=T0, holder=holder,
    )  # fmt: skip


def test_a_round_is_finished_by_its_decision_and_no_reclaim_abandons_it(
    store: Store, model: str
) -> None:
    rid = _claim(store, model, "one", T0)
    assert _decide(store, model, rid, _failing(model, T0, rid), holder="one")
    assert round_of(store, rid).status == "finished"
    # its claimer stopped beating long ago: still, a decided round is not claimed again
    assert (
        store.claim_round(model, T0, "two", "p-1", {}, started_at=LATER, lost_before=LATER) is None
    )
    assert store.abandon_stale_rounds(LATER + timedelta(hours=2), now=LATER) == 0
    assert round_of(store, rid).status == "finished"
    assert store.heartbeat_round(rid, "one", LATER)  # finished, not lost
    store.finish_round(rid, "finished", cost_usd=0.5, at=LATER, holder="one")  # its end, noted
    row = round_of(store, rid)
    assert row.status == "finished" and row.cost_usd == 0.5 and row.finished_at == LATER


def test_a_shutdown_never_abandons_a_round_that_decided(store: Store, model: str) -> None:
    decided = _claim(store, model, "one", T0)
    running = _claim(store, model, "one", T0, slot=T0 + timedelta(minutes=30))
    assert _decide(store, model, decided, _failing(model, T0, decided), holder="one")
    assert store.abandon_rounds_of("one", LATER, why="shutdown") == 1
    assert round_of(store, decided).status == "finished"
    assert round_of(store, running).status == "abandoned"
    # a failure after the decision closes the round without a holder: it stays finished
    store.finish_round(decided, "abandoned", detail={"error": "Boom"}, at=LATER)
    row = round_of(store, decided)
    assert row.status == "finished" and row.detail == {"error": "Boom"}


def test_an_abandoned_round_stays_abandoned(store: Store, model: str) -> None:
    rid = _claim(store, model, "one", T0)
    assert store.abandon_rounds_of("one", T0, why="shutdown") == 1
    store.finish_round(rid, "finished", at=LATER)
    assert round_of(store, rid).status == "abandoned"


def test_a_heartbeat_of_a_finished_round_is_not_a_loss(store: Store, model: str) -> None:
    finished = _claim(store, model, "one", T0)
    store.finish_round(finished, "finished", at=T0, holder="one")
    assert store.heartbeat_round(finished, "one", T0 + timedelta(seconds=1)) is True
    assert store.heartbeat_round(finished, "two", T0 + timedelta(seconds=1)) is False
    lost = _claim(store, model, "one", T0, slot=T0 + timedelta(minutes=30))
    store.abandon_rounds_of("one", T0, why="shutdown")
    assert store.heartbeat_round(lost, "one", T0 + timedelta(seconds=1)) is False


def test_a_stale_round_still_beating_is_not_abandoned(store: Store, model: str) -> None:
    rid = _claim(store, model, "one", T0)
    assert store.heartbeat_round(rid, "one", T0 + timedelta(hours=2))
    assert store.abandon_stale_rounds(T0 + timedelta(hours=1), now=T0 + timedelta(hours=2)) == 0
    assert round_of(store, rid).status == "running"


def test_a_lost_round_writes_nothing(store: Store, model: str) -> None:
    dead = _claim(store, model, "one", T0)
    _claim(store, model, "two", LATER)  # the claimer stopped beating: reclaimed
    endpoint = Endpoint(model, "alpha", "Alpha", Pricing(1e-7, 2e-7))
    probe = Observation(Contract.ttft, "alpha", Transport.ok, ttft_s=0.5, nonce="n1")
    passed = ContractResult(Contract.ttft, Result.passed, "ttft 0.5 s <= 10 s")
    verdict = RoundVerdict(model, "alpha", Verdict.passed, (passed,))
    change = DriftChange("alpha", "quantization", "fp8", "int4", alert=True)
    writes: list[Callable[[], object]] = [
        lambda: store.record_observations(dead, model, [probe], LATER, holder="one"),
        lambda: store.record_verdicts(
            dead, model, {"alpha": verdict}, {"alpha": "x"}, holder="one"
        ),
        lambda: store.record_snapshots(dead, model, [endpoint], LATER, holder="one"),
        lambda: store.record_drift(dead, model, [change], LATER, holder="one"),
    ]
    for write in writes:
        with pytest.raises(RoundLost):
            write()
    assert store.probes(dead) == [] and store.round_verdicts(dead) == {}
    assert store.latest_snapshot(model) is None and store.drift(model) == []


def test_writes_of_the_claimer_holding_the_round_go_through(store: Store, model: str) -> None:
    rid = _claim(store, model, "one", T0)
    probe = Observation(Contract.ttft, "alpha", Transport.ok, ttft_s=0.5, nonce="n1")
    assert store.record_observations(rid, model, [probe], T0, holder="one") == 1
    with pytest.raises(RoundLost):
        store.record_observations(rid, model, [probe], T0, holder="two")


def test_one_slot_counts_once_per_endpoint(store: Store, model: str) -> None:
    stale = _claim(store, model, "one", T0)
    again = _claim(store, model, "two", LATER)  # the same slot, claimed anew
    assert _decide(store, model, again, _failing(model, T0, again), holder="two")
    counted = store.load_states(model)
    # a writer that never claimed the round (no holder) cannot count the slot a second time
    with pytest.raises(SlotAlreadyCounted):
        _decide(store, model, stale, _failing(model, T0, again, stale), holder=None)
    assert store.load_states(model) == counted
    # the next slot counts as usual
    following = _claim(store, model, "two", LATER, slot=T0 + timedelta(minutes=30))
    assert _decide(store, model, following, _failing(model, T0, again, following), holder="two")


def test_an_extra_round_keeps_its_mark_however_it_ends(store: Store, model: str) -> None:
    shut = store.claim_round(model, T0, "extra-one", "p-1", {}, started_at=T0, extra=True)
    lost = store.claim_round(
        model, T0 + timedelta(minutes=1), "extra-one", "p-1", {}, started_at=T0, extra=True
    )
    stale = store.claim_round(
        model, T0 + timedelta(minutes=2), "extra-two", "p-1", {}, started_at=T0, extra=True
    )
    assert shut is not None and lost is not None and stale is not None
    assert store.abandon_rounds_of("extra-one", LATER, why="shutdown") == 2
    assert store.abandon_stale_rounds(LATER, now=LATER) >= 1
    for rid, why in ((shut, "shutdown"), (lost, "shutdown"), (stale, "stale")):
        row = round_of(store, rid)
        assert row.status == "abandoned" and row.detail == {"why": why, "extra": True}
    scheduled = _claim(store, model, "extra-one", T0 + timedelta(minutes=30))
    assert store.abandon_rounds_of("extra-one", LATER, why="shutdown") == 1
    assert round_of(store, scheduled).detail == {"why": "shutdown"}
