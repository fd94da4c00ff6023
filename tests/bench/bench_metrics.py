"""Benchmark: one `GET /metrics` scrape of a large fleet, its series and its time.

    .venv/bin/python tests/bench/bench_metrics.py [--models 200] [--per-model 10] [--runs 5]

Seeds a store through its own API (tests/metrics_fleet.py: one finished round per model, every
endpoint listed, judged and timed, one quarantined and one suspect per model, a budget set: the
widest scrape of that fleet), then scrapes the real ASGI app: the first scrape of each run reads
the store (a new app each run), the second answers from the figures read. Prints the series per
metric and in all, beside the limit (50,000 at 2,000 endpoints), and the wall times. On SQLite
and, when it answers, on the PostgreSQL of CANARY_TEST_POSTGRES_URL (a database of its own,
dropped afterwards).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_store import postgres_url  # noqa: E402
from metrics_fleet import fleet_client, fleet_models, seed_fleet, series_by_metric  # noqa: E402

from canary.store.repository import Store  # noqa: E402

LIMIT = 50_000
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def run(name: str, url: str, args: argparse.Namespace) -> None:
    store = Store(url)
    store.upgrade()
    models = fleet_models(args.models)
    started = time.perf_counter()
    seed_fleet(store, models, args.per_model, NOW)
    print(f"== {name}: {args.models} models x {args.per_model} endpoints")
    print(f"  seeded in {time.perf_counter() - started:.1f} s")
    cold, warm = [], []
    text = ""
    for _ in range(args.runs):
        client = fleet_client(store, models, NOW)
        started = time.perf_counter()
        text = client.get("/metrics").text
        cold.append(time.perf_counter() - started)
        started = time.perf_counter()
        client.get("/metrics")
        warm.append(time.perf_counter() - started)
    series = series_by_metric(text)
    for metric, n in sorted(series.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {metric:<48} {n:>7,}")
    total = sum(series.values())
    print(f"  {'total':<48} {total:>7,}  (limit {LIMIT:,}: {'ok' if total < LIMIT else 'OVER'})")
    print(
        f"  scrape reading the store: median {statistics.median(cold) * 1000:.0f} ms, "
        f"max {max(cold) * 1000:.0f} ms; from the figures read: "
        f"median {statistics.median(warm) * 1000:.0f} ms ({len(text) / 1e6:.1f} MB of text)"
    )
    store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--per-model", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run("SQLite", f"sqlite:///{Path(folder) / 'canary.db'}", args)
    with postgres_url() as url:
        if url is None:
            print("== PostgreSQL: unreachable, skipped")
        else:
            run("PostgreSQL", url, args)


if __name__ == "__main__":
    main()
