"""Retention over a 60-day store (SQLite and PostgreSQL): what is inside the window reads the same
after pruning, what is outside it is gone, and the decisions' record (rounds, equality checks,
quarantines, audit) stays whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import endpoints, result, ttft, verdict
from pydantic_core import to_jsonable_python as jsonable
from sqlalchemy import func, select

from canary.core.equality import EndpointEquality, Outcome
from canary.core.events import event_of
from canary.core.model import (
    Contract,
    EndpointState,
    EventKind,
    Look,
    Observation,
    Result,
    RoundVerdict,
    Transport,
    Verdict,
)
from canary.core.quarantine import QuarantineStart
from canary.store import Store
from canary.store import tables as t
from canary.store._retention import RETENTION_LEASE
from canary.views.providers import provider_views_of

# 60 days of rounds seeded once for the module: seconds on PostgreSQL, more on a loaded machine
pytestmark = pytest.mark.timeout(90)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DAYS = 60
KEEP_DAYS = 30
PER_DAY = 2  # rounds a day: 120 rounds in all (retention cuts by date, not by count)
EVERY = timedelta(days=1) / PER_DAY
TAGS = ("alpha", "bravo/fp8")
SAMPLES = 3


@dataclass(frozen=True)
class Fleet:
    model: str
    gone: str  # a model listed only 45 to 40 days ago: its last listing is older than the window
    rounds: int


def _verdict(model: str, tag: str, k: int) -> RoundVerdict:
    seconds = round(0.5 + (k % 7) / 10 + (0.4 if tag == "bravo/fp8" else 0), 1)
    clean = result(Contract.hygiene, Result.passed, "clean start")
    return verdict(model, tag, Verdict.passed, ttft(seconds), clean)


def _round(store: Store, model: str, at: datetime, k: int) -> int:
    rid = store.claim_round(model, at, "seed:1", "p-retention", {}, started_at=at)
    assert rid is not None
    # the price changes now and then: snapshots differ, as real listings do
    store.record_snapshots(rid, model, endpoints(model, *TAGS, price=1e-7 * (1 + k // 40)), at)
    observations = [
        Observation(
            contract=Contract.ttft,
            tag=tag,
            transport=Transport.ok,
            ttft_s=0.5 + (k % 7) / 10 + sample / 100,
            nonce=f"{rid}-{tag}-{sample}",
            attempt=sample + 1,
        )
        for tag in TAGS
        for sample in range(SAMPLES)
    ]
    store.record_observations(rid, model, observations, at)
    store.record_verdicts(rid, model, {tag: _verdict(model, tag, k) for tag in TAGS})
    store.finish_round(rid, "finished", cost_usd=0.001, at=at + timedelta(minutes=1))
    return rid


def _seed(store: Store, model: str) -> Fleet:
    gone = f"{model}-gone"
    start = NOW - timedelta(days=DAYS)
    count = 0
    at = start
    while at < NOW:
        rid = _round(store, model, at, count)
        if count == 20:  # an old quarantine: its row, state and audit record must stay
            q_at = at + timedelta(minutes=1)
            store.apply_decision(
                round_id=rid,
                model=model,
                before={},
                after={"alpha": EndpointState(model=model, tag="alpha", ladder_step=1)},
                events=[
                    event_of(
                        EventKind.quarantine, model, "alpha", {"step": 1}, (Look.round(rid, at),)
                    )
                ],
                quarantines_started=[
                    QuarantineStart(
                        model,
                        "alpha",
                        q_at,
                        q_at + timedelta(days=1),
                        1,
                        "old",
                        (Look.round(rid, at),),
                    )
                ],
                actor="canary",
                policy_version="p-retention",
                at=q_at,
            )
        count += 1
        at += EVERY
    day = start
    while day < NOW:  # an equality check a day, a result per endpoint with its examples
        check = store.claim_equality(model, day, "eq:1", {}, at=day, lost_before=day)
        assert check is not None
        results = [
            (EndpointEquality(tag, Outcome.passed, examples=("once",)), True) for tag in TAGS
        ]
        assert store.finish_equality(check, "eq:1", results, at=day + timedelta(minutes=5))
        day += timedelta(days=1)
    at = NOW - timedelta(days=45)
    while at < NOW - timedelta(days=40):
        _round(store, gone, at, count)
        count += 1
        at += EVERY
    return Fleet(model, gone, count)


def _reads(store: Store, fleet: Fleet) -> dict[str, Any]:
    """What the status, provider, history and drift reads show, for inside the window."""
    views = provider_views_of(store, [fleet.model], builtin=(), now=NOW, degraded_p95_s=5)
    return {
        "views": [v.as_json() for v in views[fleet.model]],
        "history": [jsonable(h) for tag in TAGS for h in store.history(fleet.model, tag, 50)],
        "histograms": store.ttft_histograms_of(
            [fleet.model], NOW - timedelta(days=1), NOW - timedelta(days=7)
        ),
        "snapshots": store.latest_snapshots([fleet.model, fleet.gone]),
        "rounds": [jsonable(r) for r in store.recent_rounds(None, 500)],
        "audit": [jsonable(a) for a in store.audit(limit=500)],
        "quarantines": [jsonable(q) for q in store.quarantines(active_only=False, now=NOW)],
        "states": store.load_states_of([fleet.model]),
        "spend_7d": store.spend(NOW - timedelta(days=7), fleet.model),
        "equality": [jsonable(e) for e in store.latest_equality([fleet.model])],
    }


def _count(store: Store, table: Any, model: str) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).where(table.c.model == model)).scalar_one())


def _oldest(store: Store, column: Any, model: str) -> datetime:
    with store.engine.connect() as conn:
        value = conn.execute(select(func.min(column)).where(column.table.c.model == model)).scalar()
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def seeded(store: Store) -> Iterator[tuple[Store, Fleet, dict[str, Any]]]:
    fleet = _seed(store, "acme/retention-1")
    yield store, fleet, _reads(store, fleet)


def test_pruning_60_days_to_30_keeps_every_read_inside_the_window(
    seeded: tuple[Store, Fleet, dict[str, Any]],
) -> None:
    store, fleet, before = seeded
    window_rounds = KEEP_DAYS * PER_DAY
    assert _count(store, t.probes, fleet.model) == DAYS * PER_DAY * len(TAGS) * SAMPLES

    pruned = store.prune_once("me:1", NOW, keep_days=KEEP_DAYS, lease_s=3600)

    assert pruned is not None and pruned.complete
    cutoff = NOW - timedelta(days=KEEP_DAYS)
    assert (
        pruned.probes
        == (DAYS - KEEP_DAYS) * PER_DAY * len(TAGS) * SAMPLES + 5 * PER_DAY * len(TAGS) * SAMPLES
    )
    assert _reads(store, fleet) == before
    # bounded: only the window's evidence is left
    assert _count(store, t.probes, fleet.model) == window_rounds * len(TAGS) * SAMPLES
    assert _count(store, t.contract_results, fleet.model) == window_rounds * len(TAGS) * 2
    assert _count(store, t.round_verdicts, fleet.model) == window_rounds * len(TAGS)
    assert _count(store, t.endpoint_snapshots, fleet.model) == window_rounds * len(TAGS)
    assert pruned.equality_results == (DAYS - KEEP_DAYS) * len(TAGS)
    assert _count(store, t.equality_results, fleet.model) == KEEP_DAYS * len(TAGS)
    assert _count(store, t.equality_checks, fleet.model) == DAYS  # kept, as rounds are
    for table, column in (
        (t.probes, t.probes.c.at),
        (t.endpoint_snapshots, t.endpoint_snapshots.c.at),
        (t.ttft_buckets, t.ttft_buckets.c.hour),
        (t.equality_results, t.equality_results.c.at),
    ):
        assert _oldest(store, column, fleet.model) >= cutoff, table.name
    # the record of decisions is whole: every round, the old quarantine and its audit row
    assert _count(store, t.rounds, fleet.model) == DAYS * PER_DAY
    assert _count(store, t.quarantines, fleet.model) == 1
    assert _count(store, t.audit, fleet.model) == 1
    # the model last listed 40 days ago keeps that listing: the next round diffs against it
    assert _count(store, t.endpoint_snapshots, fleet.gone) == len(TAGS)
    assert _count(store, t.probes, fleet.gone) == 0
    # its latency figures (both windows of each tag, as of a round 40 days ago) go; the live
    # model's stay
    assert pruned.latency_figures == 2 * len(TAGS)  # the two windows of each tag
    assert pruned.error_figures == len(TAGS)
    assert _count(store, t.latency_figures, fleet.gone) == 0
    assert _count(store, t.error_figures, fleet.gone) == 0
    assert _count(store, t.latency_figures, fleet.model) == 2 * len(TAGS)
    assert _count(store, t.error_figures, fleet.model) == len(TAGS)


def test_a_second_pass_finds_nothing_and_a_stopped_pass_deletes_nothing(
    seeded: tuple[Store, Fleet, dict[str, Any]],
) -> None:
    store, _fleet, _ = seeded
    cutoff = NOW - timedelta(days=KEEP_DAYS)
    assert store.prune_before(cutoff).total == 0
    stopped = store.prune_before(
        cutoff - timedelta(days=1) + timedelta(days=7), should_stop=lambda: True
    )
    assert stopped.total == 0 and not stopped.complete


def test_one_replica_prunes_at_a_time_and_at_most_once_per_lease(store: Store) -> None:
    # (the module's store may hold the lease of the test above: start after it ran out)
    later = NOW + timedelta(days=1)
    store.release_lease(RETENTION_LEASE, "me:1")
    assert store.prune_once("one:1", later, keep_days=KEEP_DAYS, lease_s=3600) is not None
    assert (
        store.prune_once("two:2", later + timedelta(minutes=5), keep_days=30, lease_s=3600) is None
    )
    assert (
        store.prune_once("one:1", later + timedelta(minutes=5), keep_days=30, lease_s=3600) is None
    )
    an_hour_on = later + timedelta(hours=1)
    assert store.prune_once("two:2", an_hour_on, keep_days=KEEP_DAYS, lease_s=3600) is not None
    lease = store.lease(RETENTION_LEASE)
    assert lease is not None and lease.holder == "two:2"
