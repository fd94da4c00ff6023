"""Nothing an abandoned attempt wrote counts: the latency histograms take a round's probes when
it finishes, and the reads behind decisions and operators leave abandoned attempts (and, for the
served-model baseline, extra rounds) out. The same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from builders import observation, passed, round_of, ttft

from canary.core.model import (
    Contract,
    EndpointState,
)
from canary.core.stats import latency_bucket
from canary.store import Store

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SLOT = timedelta(minutes=30)
TTL = timedelta(seconds=90)


def _round(
    store: Store, model: str, slot: datetime, holder: str, ttft_s: float, served: str
) -> int:
    """A round that probed and judged ``alpha`` (still running)."""
    rid = store.claim_round(model, slot, holder, "p-1", {}, started_at=slot, lost_before=slot - TTL)
    assert rid is not None
    probe = observation(Contract.ttft, "alpha", ttft_s=ttft_s, nonce=f"{rid}")
    store.record_observations(rid, model, [probe], slot, holder=holder)
    judged = passed(model, ["alpha"], ttft(ttft_s))
    store.record_verdicts(rid, model, judged, {"alpha": served}, holder=holder)
    return rid


def _week(store: Store, model: str) -> dict[int, tuple[int, float]]:
    _, week = store.ttft_histograms_of([model], T0, T0 - timedelta(days=1))[model]
    return week.get("alpha", {})


def test_a_rounds_probes_join_the_histograms_once_when_it_finishes(
    store: Store, model: str
) -> None:
    rid = _round(store, model, T0, "one", 1.0, "x/a")
    assert _week(store, model) == {}  # running: not counted yet
    store.finish_round(rid, "finished", at=T0, holder="one")
    store.finish_round(rid, "finished", at=T0)  # closed again (a late failure): not counted twice
    assert _week(store, model) == {latency_bucket(1.0): (1, 1.0)}


def test_a_decided_round_is_counted_in_its_decision(store: Store, model: str) -> None:
    rid = _round(store, model, T0, "one", 1.0, "x/a")
    assert store.apply_decision(
        round_id=rid, model=model, before={}, after={"alpha": EndpointState(model, "alpha")},
        events=[], actor="canary", policy_version="p-1", at=T0, holder="one",
    )  # fmt: skip
    assert _week(store, model) == {latency_bucket(1.0): (1, 1.0)}
    store.finish_round(rid, "finished", at=T0, holder="one")
    assert _week(store, model) == {latency_bucket(1.0): (1, 1.0)}


def test_an_abandoned_attempt_is_left_out_of_the_reads(store: Store, model: str) -> None:
    first = _round(store, model, T0, "one", 1.0, "x/a")
    store.finish_round(first, "finished", at=T0, holder="one")
    # the next slot's attempt judged, then its claimer died before deciding
    dead = _round(store, model, T0 + SLOT, "one", 5.0, "x/b")
    later = T0 + SLOT + TTL + timedelta(seconds=1)
    again = store.claim_round(
        model, T0 + SLOT, "two", "p-1", {}, started_at=later, lost_before=later - TTL
    )
    assert again is not None and round_of(store, dead).status == "abandoned"

    assert _week(store, model) == {latency_bucket(1.0): (1, 1.0)}
    assert store.ttft_recent(model, T0, 10) == {"alpha": [1.0]}
    assert store.served_models_before(model, again) == {"alpha": "x/a"}
    latest = store.latest_results_of([model])[model]["alpha"]["ttft"]
    assert latest.round_id == first and latest.figure == 1.0


def test_an_extra_round_never_becomes_the_served_baseline(store: Store, model: str) -> None:
    first = _round(store, model, T0, "one", 1.0, "x/a")
    store.finish_round(first, "finished", at=T0, holder="one")
    extra = _round(store, model, T0 + timedelta(minutes=5), "one", 1.0, "x/b")
    store.finish_round(extra, "finished", detail={"extra": True}, at=T0, holder="one")
    following = _round(store, model, T0 + SLOT, "one", 1.0, "x/b")
    # the next deciding round compares with the last deciding one: it sees the change
    assert store.served_models_before(model, following) == {"alpha": "x/a"}
