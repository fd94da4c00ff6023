"""Migration 0002 fills the latency histograms from the probes stored before it; 0003 marks
those probes as not stalled (a fresh database: the store URL fixture gives one per module)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from canary.core.model import Contract, Observation, Transport
from canary.core.stats import latency_bucket
from canary.store import Store
from canary.store import tables as t
from canary.store._rounds import _probe_values
from canary.store.migrate import head_revision, upgrade


def test_the_latency_histograms_are_filled_from_the_probes_already_stored(
    store_url: str,
) -> None:
    store = Store(store_url)
    try:
        assert upgrade(store.engine, "0001") == "0001"
        now = datetime.now(UTC)
        with store.engine.begin() as conn:  # a round as revision 0001 knew it
            rid = conn.execute(
                insert(t.rounds)
                .values(
                    model="acme/m",
                    scheduled_at=now,
                    started_at=now,
                    status="running",
                    policy_version="p-1",
                    runner_id="r",
                    checksums={},
                    skipped=[],
                    detail={},
                )  # fmt: skip
                .returning(t.rounds.c.id)
            ).scalar_one()
        rows = [
            _probe_values(
                rid, "acme/m", Observation(Contract.ttft, "alpha", Transport.ok, ttft_s=s), at
            )
            for s, at in ((1.5, now), (1.5, now), (2.5, now - timedelta(days=30)))
        ]  # the last one is older than any window: left out
        for row in rows:
            del row["ttft_censored"]  # a column of 0003
        with store.engine.begin() as conn:
            conn.execute(insert(t.probes), rows)
        assert store.upgrade() == head_revision()
        assert [p.ttft_censored for p in store.probes(rid)] == [False, False, False]
        windows = store.ttft_histograms_of(
            ["acme/m"], now - timedelta(days=1), now - timedelta(days=7)
        )
        day, week = windows["acme/m"]
        assert day == week == {"alpha": {latency_bucket(1.5): (2, 1.5)}}
    finally:
        store.dispose()
