"""Benchmark: how fast `canary status` answers on a store that has run for days.

    .venv/bin/python tests/bench/bench_cli.py [--models 20] [--providers 15] [--days 7] [--runs 10]
        [--no-sqlite] [--no-postgres] [--api] [--keep | --url URL] [--canary PATH]

It seeds a store through the store's own API as the daemon would have filled it: a round every
30 minutes for `--days` days per model, each endpoint with 7 probes a round (3 latency samples
and one per other contract, each with its time to first token), its verdict and contract results,
and the endpoints listing (snapshot) of every round. Then it runs the installed `canary status` command (a new
process each time, as an operator does) `--runs` times, as a table, with --json and for one
model, and prints the wall time's p50, p90 and max, beside the target (p50 under 1.0 s). It does so on SQLite and, when it answers, on
the PostgreSQL of CANARY_TEST_POSTGRES_URL (default 127.0.0.1:5432, database test), in a
database of its own that it vacuums and analyzes after seeding (as autovacuum would have) and drops
afterwards. With `--api` it also starts `canary serve` on each seeded store and times
`GET /v1/providers?model=M` over HTTP (one keep-alive client, as an app polls it; target under
100 ms). `--canary` times another installation of the command: the default is the checkout's
editable install, whose finder and test tools cost every start of it about 25 ms that a release
installed with `pip install .` (as the Docker image has it) does not.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Transport,
    Verdict,
)
from canary.store.repository import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import postgres_url  # noqa: E402

CANARY = Path(sys.executable).with_name("canary")
PROBES = Path(__file__).resolve().parents[2] / "probes"
TARGET_S = 1.0
PROVIDERS_TARGET_S = 0.1
CONTRACTS = (Contract.refusal, Contract.language, Contract.schema, Contract.tools)
PASSING = tuple(
    ContractResult(c, Result.passed, "ok") for c in (Contract.ttft, *CONTRACTS, Contract.hygiene)
)


def seed(
    store: Store,
    models: int,
    providers: int,
    days: float,
    now: datetime,
    spread: float = 0.35,
    only: range | None = None,
) -> int:
    """Rounds every 30 minutes up to `now`; returns how many probe rows were written.

    Each probe's time to first token is its endpoint's typical time (0.3-1.1 s) times a
    log-normal factor of sigma `spread`, as real hosts vary from answer to answer (0.35: about
    0.6x to 1.8x between the 5th and the 95th percentile); that is what fills the latency
    histograms with many buckets per endpoint and hour, as in production. 0: every probe of an
    endpoint and round takes the same time (few buckets: a flattering store). `only`: seed just
    these models (a share of a parallel seeding; each model's figures do not depend on it)."""
    rounds = int(days * 48)
    written = 0
    for m in only if only is not None else range(models):
        rng = random.Random(7 + m)
        model = f"bench/model-{m}"
        tags = [f"host{p}" for p in range(providers)]
        endpoints = [
            Endpoint(
                model=model,
                tag=tag,
                provider_name=f"Host {p}",
                pricing=Pricing(1e-7, 2e-7),
                latency_last_30m={"p50": 600.0, "p99": 3000.0},
            )
            for p, tag in enumerate(tags)
        ]
        for r in range(rounds):
            at = now - timedelta(minutes=30 * (rounds - r))
            rid = store.claim_round(model, at, "bench", "p-bench", {}, started_at=at)
            assert rid is not None
            store.record_snapshots(rid, model, endpoints, at)
            observations = [
                Observation(
                    contract=contract,
                    tag=tag,
                    transport=Transport.ok,
                    ttft_s=round(
                        (0.3 + (p % 5) * 0.2 + (r % 7) * 0.01)
                        * (math.exp(rng.gauss(0.0, spread)) if spread else 1.0),
                        4,
                    ),
                    nonce=f"{rid}-{tag}-{contract}-{sample}",
                    attempt=sample + 1,
                )
                for p, tag in enumerate(tags)
                for contract, sample in [(Contract.ttft, s) for s in range(3)]
                + [(c, 0) for c in CONTRACTS]
            ]
            written += store.record_observations(rid, model, observations, at)
            store.record_verdicts(
                rid,
                model,
                {t: RoundVerdict(model, t, Verdict.passed, PASSING) for t in tags},
            )
            store.finish_round(rid, "finished", cost_usd=0.001, at=at + timedelta(minutes=2))
    return written


def kept_database(name: str) -> str:
    """A new PostgreSQL database ``name`` beside CANARY_TEST_POSTGRES_URL's (dropped first)."""
    from sqlalchemy import create_engine, make_url, text

    admin_url = make_url(
        os.environ.get(
            "CANARY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
        )
    )
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return admin_url.set(database=name).render_as_string(hide_password=False)


def time_status(
    canary: Path, url: str, models: int, runs: int, folder: Path, *extra: str
) -> list[float]:
    config = folder / "canary.toml"
    config.write_text(
        f'database_url = "{url}"\n'
        + "".join(f'[[models]]\nid = "bench/model-{m}"\n' for m in range(models)),
        encoding="utf-8",
    )
    # an installed release finds its probe definitions as the Docker image points it at them
    env = {"CANARY_PROBES_DIR": str(PROBES), **os.environ}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [str(canary), "--config", str(config), "status", *extra],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0 or "bench/model-0" not in done.stdout:
            raise SystemExit(f"canary status failed: {done.stderr.strip()}")
    return times


def report(name: str, times: list[float], target_s: float = TARGET_S) -> None:
    ordered = sorted(times)
    p50 = statistics.median(ordered)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    worst = ordered[-1]
    print(
        f"  {name:<38} p50 {p50:.3f} s  p90 {p90:.3f} s  max {worst:.3f} s  "
        f"(target p50 < {target_s} s: {'met' if p50 < target_s else 'NOT met'})"
    )


def wait_until_serving(
    http: httpx.Client,
    base: str,
    process: subprocess.Popen[bytes],
    within_s: float,
    log: Path | None = None,
) -> None:
    """Until `canary serve` at ``base`` answers /healthz; SystemExit (with its ``log``, when
    given) if it exits first or takes longer than ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            if http.get(f"{base}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            said = f":\n{log.read_text()}" if log is not None else ""
            raise SystemExit(f"canary serve did not start{said}")
        time.sleep(0.2)


def time_providers(url: str, models: int, runs: int, folder: Path) -> list[float]:
    """`canary serve` on the store, then `runs` GETs of one model's providers over HTTP."""
    from canary.service.ports import free_port

    port = free_port()
    config = folder / "serve.toml"
    config.write_text(
        f'database_url = "{url}"\n'
        # rounds would probe OpenRouter: point them at a closed port, they fail at once
        f'[openrouter]\nbase_url = "http://127.0.0.1:{free_port()}/api/v1"\n'
        + "".join(f'[[models]]\nid = "bench/model-{m}"\n' for m in range(models)),
        encoding="utf-8",
    )
    env = {**os.environ, "OPENROUTER_API_KEY": "bench-key", "CANARY_LOG_FORMAT": "json"}
    serve = subprocess.Popen(
        [str(CANARY), "--config", str(config), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=30) as http:
            wait_until_serving(http, base, serve, 120)
            times = []
            for i in range(runs + 3):
                started = time.perf_counter()
                answer = http.get(f"{base}/v1/providers", params={"model": "bench/model-0"})
                elapsed = time.perf_counter() - started
                if answer.status_code != 200 or not answer.json().get("providers"):
                    raise SystemExit(f"/v1/providers answered {answer.status_code}")
                if i >= 3:  # the first answers warm the process up
                    times.append(elapsed)
            return times
    finally:
        serve.terminate()
        serve.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--providers", type=int, default=15)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--api", action="store_true", help="also time GET /v1/providers")
    parser.add_argument(
        "--spread",
        type=float,
        default=0.35,
        help="sigma of each probe's log-normal time to first token (0: constant per round)",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="processes that seed a PostgreSQL store together"
    )
    parser.add_argument(
        "--url",
        help="time an existing store instead (seeded by an earlier run with --keep, same sizes)",
    )
    parser.add_argument(
        "--canary",
        type=Path,
        default=CANARY,
        help="the canary command to time (default: this Python's, an editable install in a "
        "checkout; an installed release, as `pip install .` or the Docker image has it, starts "
        "without the editable finder and the test tools' distributions)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="seed a PostgreSQL database named canary_bench_cli_<models>x<providers> and keep it",
    )
    args = parser.parse_args()
    now = datetime.now(UTC).replace(microsecond=0)
    print(
        f"{args.models} models x {args.providers} endpoints, a round every 30 min for "
        f"{args.days:g} days, 7 probes per endpoint and round; {args.runs} runs each"
    )
    with tempfile.TemporaryDirectory(prefix="canary-bench-cli-") as tmp:
        folder = Path(tmp)
        if args.url:
            time_all(args, folder, "existing store", args.url)
            return
        if args.keep:
            url = kept_database(f"canary_bench_cli_{args.models}x{args.providers}")
            run(args, now, folder, "postgresql (kept)", url)
            print(f"kept: time it again with --url {url}")
            return
        if not args.no_sqlite:
            run(args, now, folder, "sqlite", f"sqlite:///{folder / 'canary.db'}")
        if args.no_postgres:
            return
        with postgres_url() as url:
            if url is None:
                print("postgresql: not reachable; SQLite only")
                return
            run(args, now, folder, "postgresql", url)


def run(args: argparse.Namespace, now: datetime, folder: Path, name: str, url: str) -> None:
    store = Store(url)
    try:
        store.upgrade()
        started = time.perf_counter()
        rows = seed_in_parallel(store, args, now)
        seeded = time.perf_counter() - started
        if store.is_postgres:
            # A running PostgreSQL has statistics and, for a table that only grows, the visibility
            # map that index-only scans need (autovacuum vacuums inserts since PostgreSQL 13).
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
    finally:
        store.dispose()
    print(f"{name}: {rows} probes (seeded in {seeded:.1f} s)")
    time_all(args, folder, name, url)


def seed_share(url: str, args: argparse.Namespace, now: datetime, share: int) -> int:
    store = Store(url)
    try:
        only = range(share, args.models, args.jobs)
        return seed(store, args.models, args.providers, args.days, now, args.spread, only)
    finally:
        store.dispose()


def seed_in_parallel(store: Store, args: argparse.Namespace, now: datetime) -> int:
    """`--jobs` processes seed a share of the models each (SQLite: one, it has a single writer)."""
    jobs = args.jobs if store.is_postgres else 1
    if jobs <= 1:
        return seed(store, args.models, args.providers, args.days, now, args.spread)
    from concurrent.futures import ProcessPoolExecutor

    url = store.engine.url.render_as_string(hide_password=False)
    with ProcessPoolExecutor(jobs) as pool:
        shares = [pool.submit(seed_share, url, args, now, share) for share in range(jobs)]
        return sum(share.result() for share in shares)


def time_all(args: argparse.Namespace, folder: Path, name: str, url: str) -> None:
    print(f"{name}: load average {os.getloadavg()[0]:.2f}; timing {args.canary}")
    for shown, extra in (
        ("(a table per model)", ()),
        ("--json", ("--json",)),
        ("--model bench/model-0", ("--model", "bench/model-0")),
    ):
        times = time_status(args.canary, url, args.models, args.runs, folder, *extra)
        report(f"canary status {shown}", times)
    if args.api:
        report(
            "GET /v1/providers?model=bench/model-0",
            time_providers(url, args.models, max(args.runs, 20), folder),
            PROVIDERS_TARGET_S,
        )


if __name__ == "__main__":
    main()
