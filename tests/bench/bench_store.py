"""Store throughput for one large round, on SQLite and (when reachable) PostgreSQL.

Run: .venv/bin/python tests/bench/bench_store.py [--endpoints 300] [--rounds 3]
Prints, per backend, how long a round's writes take (wall and the process's CPU) for the first
round (the states are inserted) and the last of `--rounds` (they are updated): claim, snapshots,
probes (one per contract and endpoint), verdicts, one decision (state CAS + audit for every
endpoint), reading the states back; then 200 lease acquisitions.
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

from canary.core.events import event_of
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    EventKind,
    Look,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Streak,
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


def timed(label: str, work: Callable[[], object], shown: bool = True) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    work()
    if shown:
        print(
            f"  {label:<44} {1000 * (time.perf_counter() - start):8.1f} ms"
            f"  (CPU {1000 * (time.process_time() - cpu):7.1f} ms)"
        )


def bench(url: str, n: int, rounds: int) -> None:
    store = Store(url)
    timed("upgrade (empty -> head)", store.upgrade)
    tags = [f"p{i:03d}" for i in range(n)]
    endpoints = [Endpoint(MODEL, t, t.upper(), Pricing(1e-7, 3e-7), ("max_tokens",)) for t in tags]
    contracts = list(Contract)
    verdicts = {
        t: RoundVerdict(
            MODEL,
            t,
            Verdict.passed,
            tuple(ContractResult(c, Result.passed, "ok") for c in contracts),
        )
        for t in tags
    }
    before: dict[str, EndpointState] = {}
    for r in range(rounds):
        one_round(store, r, rounds, tags, endpoints, verdicts, before)

    def leases() -> None:
        for i in range(200):
            store.try_acquire_lease("bench", "me", T0 + timedelta(seconds=i), 60)

    timed("200 x try_acquire_lease", leases)
    store.dispose()


def one_round(
    store: Store,
    r: int,
    rounds: int,
    tags: list[str],
    endpoints: list[Endpoint],
    verdicts: dict[str, RoundVerdict],
    before: dict[str, EndpointState],
) -> None:
    n, contracts = len(tags), list(Contract)
    shown = r in (0, rounds - 1)  # the first round inserts the states, later ones update
    if shown:
        print(f" round {r + 1} of {rounds}")
    at = T0 + timedelta(minutes=30 * r)
    observations = [
        Observation(c, t, Transport.ok, language="en", ttft_s=0.5, content="x" * 300,
                    usage=Usage(50, 120, 1e-5), nonce=f"{r}-{t}-{c}")
        for t in tags for c in contracts
    ]  # fmt: skip
    round_ids: list[int] = []
    timed(
        "claim_round",
        lambda at=at: round_ids.append(store.claim_round(MODEL, at, "bench", "p-1", {}) or 0),
        shown,
    )
    rid = round_ids[0]
    timed(
        f"record_snapshots ({n} endpoints)",
        lambda at=at: store.record_snapshots(rid, MODEL, endpoints, at),
        shown,
    )
    timed(f"record_observations ({len(observations)} probes)",
          lambda at=at: store.record_observations(rid, MODEL, observations, at),
          shown)  # fmt: skip
    timed(
        f"record_verdicts ({n} x {len(contracts)} results)",
        lambda: store.record_verdicts(rid, MODEL, verdicts),
        shown,
    )
    after = {
        t: EndpointState(
            MODEL,
            t,
            streaks=(Streak(Contract.ttft, r + 1, at, (Look.round(rid, at),)),),
            version=before[t].version + 1 if t in before else 0,
        )
        for t in tags
    }
    events = [event_of(EventKind.verdict, MODEL, t, {}, ()) for t in tags]
    timed(f"apply_decision ({n} states + {n} audit rows)", lambda at=at: store.apply_decision(
        round_id=rid, model=MODEL, before=before, after=after, events=events,
        actor="bench", policy_version="p-1", at=at), shown)  # fmt: skip
    timed("load_states", lambda: before.update(store.load_states(MODEL)), shown)
    timed("latest_results", lambda: store.latest_results_of([MODEL])[MODEL], shown)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, rounds = args.endpoints, args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        print(f"SQLite ({n} endpoints)")
        bench(f"sqlite:///{Path(tmp) / 'bench.db'}", n, rounds)
    with postgres_url() as url:
        if url is None:
            print("PostgreSQL unreachable: skipped")
        else:
            print(f"PostgreSQL ({n} endpoints)")
            bench(url, n, rounds)


if __name__ == "__main__":
    main()
