"""Store throughput for one large round, on SQLite and (when reachable) PostgreSQL.

Run: .venv/bin/python tests/bench/bench_store.py [--endpoints 300]
Prints, per backend, how long a round's writes take: claim, snapshots, probes (6 per endpoint),
verdicts, one decision (state CAS + audit for every endpoint), and 200 lease acquisitions.
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Event,
    EventKind,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Transport,
    Usage,
    Verdict,
)
from canary.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/bench-1"


@contextmanager
def postgres_url() -> Iterator[str | None]:
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.pool import NullPool

    admin_url = make_url(
        os.environ.get(
            "CANARY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
        )
    )
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"canary_bench_{secrets.token_hex(4)}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError:
        yield None
        return
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def timed(label: str, work: Callable[[], object]) -> None:
    start = time.perf_counter()
    work()
    print(f"  {label:<44} {1000 * (time.perf_counter() - start):8.1f} ms")


def bench(url: str, n: int) -> None:
    store = Store(url)
    timed("upgrade (empty -> head)", store.upgrade)
    tags = [f"p{i:03d}" for i in range(n)]
    endpoints = [Endpoint(MODEL, t, t.upper(), Pricing(1e-7, 3e-7), ("max_tokens",)) for t in tags]
    contracts = list(Contract)
    observations = [
        Observation(c, t, Transport.ok, language="en", ttft_s=0.5, content="x" * 300,
                    usage=Usage(50, 120, 1e-5), nonce=f"{t}-{c}")
        for t in tags for c in contracts
    ]  # fmt: skip
    verdicts = {
        t: RoundVerdict(
            MODEL,
            t,
            Verdict.passed,
            tuple(ContractResult(c, Result.passed, "ok") for c in contracts),
        )
        for t in tags
    }
    round_ids: list[int] = []
    timed(
        "claim_round",
        lambda: round_ids.append(store.claim_round(MODEL, T0, "bench", "p-1", {}) or 0),
    )
    rid = round_ids[0]
    timed(
        f"record_snapshots ({n} endpoints)",
        lambda: store.record_snapshots(rid, MODEL, endpoints, T0),
    )
    timed(f"record_observations ({len(observations)} probes)",
          lambda: store.record_observations(rid, MODEL, observations, T0))  # fmt: skip
    timed(
        f"record_verdicts ({n} x {len(contracts)} results)",
        lambda: store.record_verdicts(rid, MODEL, verdicts),
    )
    after = {t: EndpointState(MODEL, t, passing_streak=1) for t in tags}
    events = [Event(EventKind.verdict, MODEL, t) for t in tags]
    timed(f"apply_decision ({n} states + {n} audit rows)", lambda: store.apply_decision(
        round_id=rid, model=MODEL, before={}, after=after, events=events,
        actor="bench", policy_version="p-1", at=T0))  # fmt: skip
    timed("load_states", lambda: store.load_states(MODEL))
    timed("latest_results", lambda: store.latest_results(MODEL))

    def leases() -> None:
        for i in range(200):
            store.try_acquire_lease("bench", "me", T0 + timedelta(seconds=i), 60)

    timed("200 x try_acquire_lease", leases)
    store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", type=int, default=300)
    n = parser.parse_args().endpoints
    with tempfile.TemporaryDirectory() as tmp:
        print(f"SQLite ({n} endpoints)")
        bench(f"sqlite:///{Path(tmp) / 'bench.db'}", n)
    with postgres_url() as url:
        if url is None:
            print("PostgreSQL unreachable: skipped")
        else:
            print(f"PostgreSQL ({n} endpoints)")
            bench(url, n)


if __name__ == "__main__":
    main()
