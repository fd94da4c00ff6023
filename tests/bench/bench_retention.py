"""Benchmark: one retention pass over a store that has run for days.

    .venv/bin/python tests/bench/bench_retention.py [--models 20] [--providers 15] [--days 7]

It seeds a store as `bench_cli.py` does (a round every 30 minutes per model, 7 probes per
endpoint and round, verdicts, contract results, snapshots, latency histograms), then prunes the
older half (`Store.prune_before`, the daemon's hourly pass without its lease) and prints the rows
deleted per table, the time taken, the rows left, and the time of a second pass that finds
nothing. On SQLite and, when it answers, on the PostgreSQL of CANARY_TEST_POSTGRES_URL, in a
database of its own that it drops afterwards. A second pass on PostgreSQL right after a large
delete walks the dead index entries until autovacuum has run: that figure is the worst case.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from canary.store import tables as t
from canary.store.repository import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cli import seed  # noqa: E402
from bench_store import postgres_url  # noqa: E402

TABLES = (t.probes, t.contract_results, t.round_verdicts, t.endpoint_snapshots, t.ttft_buckets)


def counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            table.name: int(conn.execute(select(func.count()).select_from(table)).scalar_one())
            for table in (*TABLES, t.rounds)
        }


def run(args: argparse.Namespace, now: datetime, name: str, url: str) -> None:
    store = Store(url)
    try:
        store.upgrade()
        started = time.perf_counter()
        written = seed(store, args.models, args.providers, args.days, now)
        print(f"{name}: {written} probes seeded in {time.perf_counter() - started:.1f} s")
        before = counts(store)
        cutoff = now - timedelta(days=args.days / 2)
        started = time.perf_counter()
        pruned = store.prune_before(cutoff)
        took = time.perf_counter() - started
        print(
            f"  pruned {pruned.total:,} rows older than {args.days / 2:g} days in {took:.1f} s "
            f"({pruned.total / took:,.0f} rows/s): probes {pruned.probes:,}, contract results "
            f"{pruned.contract_results:,}, verdicts {pruned.round_verdicts:,}, snapshots "
            f"{pruned.endpoint_snapshots:,}, histogram rows {pruned.ttft_buckets:,}"
        )
        after = counts(store)
        print(
            "  rows before → after: "
            + ", ".join(f"{k} {before[k]:,} → {after[k]:,}" for k in before)
        )
        started = time.perf_counter()
        again = store.prune_before(cutoff)
        print(f"  a second pass: {again.total} rows in {time.perf_counter() - started:.2f} s")
    finally:
        store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--providers", type=int, default=15)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory(prefix="canary-bench-retention-") as tmp:
        run(args, now, "sqlite", f"sqlite:///{Path(tmp) / 'canary.db'}")
    if args.no_postgres:
        return
    with postgres_url() as url:
        if url is None:
            print("postgresql: not reachable; SQLite only")
            return
        run(args, now, "postgresql", url)


if __name__ == "__main__":
    main()
