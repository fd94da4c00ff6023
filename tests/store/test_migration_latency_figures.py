"""Migration 0009 fills each endpoint's latency figures from the histograms, as of its model's
latest finished round (a fresh database: the store URL fixture gives one per module)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from canary.core.stats import latency_bucket
from canary.store import Store
from canary.store import tables as t
from canary.store.migrate import head_revision, upgrade


def test_the_figures_are_filled_as_of_each_models_latest_finished_round(store_url: str) -> None:
    store = Store(store_url)
    try:
        assert upgrade(store.engine, "0008") == "0008"
        finished = datetime(2026, 5, 1, 12, 10, tzinfo=UTC)
        hour = finished.replace(minute=0)
        with store.engine.begin() as conn:
            for status, at in (("finished", finished - timedelta(hours=1)), ("finished", finished),
                               ("abandoned", finished + timedelta(minutes=30))):  # fmt: skip
                conn.execute(
                    insert(t.rounds).values(
                        model="acme/m",
                        scheduled_at=at,
                        started_at=at,
                        finished_at=at,
                        status=status,
                        policy_version="p-1",
                        runner_id="r",
                        checksums={},
                        skipped=[],
                        detail={},
                    )  # fmt: skip
                )
            conn.execute(
                insert(t.ttft_buckets),
                [
                    {
                        "model": "acme/m",
                        "tag": "alpha",
                        "hour": hour,
                        "bucket": latency_bucket(1.0),
                        "n": 3,
                        "top": 1.0,
                    },
                    {
                        "model": "acme/m",
                        "tag": "alpha",
                        "hour": hour - timedelta(days=3),
                        "bucket": latency_bucket(4.0),
                        "n": 1,
                        "top": 4.0,
                    },
                    {
                        "model": "acme/m",
                        "tag": "beta",
                        "hour": hour - timedelta(days=9),
                        "bucket": latency_bucket(2.0),
                        "n": 5,
                        "top": 2.0,
                    },
                ],  # fmt: skip
            )
        assert store.upgrade() == head_revision()
        figures = store.latency_figures_of(["acme/m"])["acme/m"]
        assert set(figures) == {"alpha"}  # beta's samples are older than a week
        assert figures["alpha"]["24h"].as_dict() == {"p50": 1.0, "p95": 1.0, "p99": 1.0, "n": 3}
        assert figures["alpha"]["7d"].as_dict() == {"p50": 1.0, "p95": 4.0, "p99": 4.0, "n": 4}
        assert figures["alpha"]["24h"].at == finished
    finally:
        store.dispose()
