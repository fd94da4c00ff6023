"""Chaos: `canary serve` SIGKILLed at random points, and PostgreSQL restarted during a round.

    .venv/bin/python tests/bench/chaos_serve.py [--kills 20] [--seed 1] [--postgres-restarts 1]

Part 1 (SQLite): a simulator subprocess where one provider prefixes garbage (the faulty provider
moves every few kills, so quarantines and recovery releases keep happening); `canary serve` in
enforce mode with a 3-second interval and a webhook to a local receiver that counts deliveries per
audit id. Each cycle starts the daemon, waits for a round started after the start to finish (the
next round runs), waits a random time and SIGKILLs it, then checks the store: every quarantine
(model, tag, since) once; every round-made audit event once per (round, tag, kind, detail); the
quarantine layer consistent (an endpoint_state with quarantined_until <=> one open quarantines
row, same end). At the end every notifiable audit row must have been delivered (none lost), and
deliveries per audit id are counted (more than one = duplicated).

Part 2 (PostgreSQL, only on a database this script creates and drops): the daemon runs, and
while a round is running the local cluster is restarted (`pg_ctlcluster ... restart`: this
restarts the SHARED server, other users' connections drop for a moment). GET /v1/ignore-list is
polled all along: it must answer 200 (stale allowed), never 5xx, never empty once it was not; the
interrupted round must end finished or abandoned, and a later round must finish.

Prints the figures; exits 1 when a violation was found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, select, text
from sqlalchemy.pool import NullPool

from canary.service.notify import NOTIFY_KINDS
from canary.service.ports import free_port
from canary.store import tables as t
from canary.store.repository import Store

MODEL = "acme/chaos-1"
TAGS = ("alpha", "bravo", "charlie", "delta", "echo")
INTERVAL_MIN = 0.05
ROUND_WAIT_S = 150.0  # a killed holder's round lease (90 s) must expire before the next round
PG_ADMIN = os.environ.get(
    "CANARY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
BIN = Path(sys.executable).parent / "canary"


def wait_http(url: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


class Receiver:
    """Counts webhook deliveries per audit id (X-Canary-Event-Id)."""

    def __init__(self) -> None:
        self.deliveries: Counter[int] = Counter()
        lock = threading.Lock()
        counts = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    counts[int(self.headers.get("X-Canary-Event-Id", "0"))] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


def write_files(folder: Path, db_url: str, sim_url: str, hook: str) -> Path:
    providers = "\n".join(
        f"      - {{tag: {tag}, ttft_ms: 20, tokens_per_second: 3000}}" for tag in TAGS
    )
    (folder / "scenario.yaml").write_text(
        f"seed: 5\nmodels:\n  - id: {MODEL}\n    providers:\n{providers}\n", encoding="utf-8"
    )
    config = folder / "canary.toml"
    config.write_text(
        f'database_url = "{db_url}"\nmode = "enforce"\ninterval_minutes = {INTERVAL_MIN}\n'
        f'languages = ["en", "pt"]\nttft_samples = 2\nlog_format = "json"\n'
        f'[openrouter]\nbase_url = "{sim_url}"\napi_key = "sk-or-v1-chaos"\n'
        f'[[models]]\nid = "{MODEL}"\n[[webhooks]]\nurl = "{hook}"\n',
        encoding="utf-8",
    )
    return config


def set_faulty(sim_root: str, faulty: str) -> None:
    for tag in TAGS:
        faults = [{"kind": "garbage_prefix", "rate": 1.0}] if tag == faulty else []
        httpx.put(
            f"{sim_root}/_sim/faults",
            params={"model": MODEL, "provider": tag},
            json={"faults": faults},
            timeout=5,
        ).raise_for_status()


def start_serve(config: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CANARY_CONFIG": str(config)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(BIN), "serve", "--port", str(port)], env=env, stdout=out, stderr=out
        )


def kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(10)


def wait_round_after(store: Store, since: datetime, timeout: float = ROUND_WAIT_S) -> float | None:
    """Seconds until a round started after `since` finished; None when none did in time."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        try:
            rows = store.recent_rounds(MODEL, limit=5)
        except Exception:
            rows = []
        if any(r.status == "finished" and r.started_at >= since for r in rows):
            return time.monotonic() - began
        time.sleep(0.2)
    return None


def spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": round(ordered[len(ordered) // 2], 2),
        "max": round(ordered[-1], 2),
    }


def is_running(store: Store) -> bool:
    return any(r.status == "running" for r in store.recent_rounds(MODEL, limit=3))


def check_store(url: str) -> list[str]:
    """Violations of the store's invariants (empty when consistent)."""
    problems: list[str] = []
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            q = conn.execute(select(t.quarantines)).all()
            states = conn.execute(select(t.endpoint_state)).all()
            audit = conn.execute(select(t.audit).where(t.audit.c.round_id.is_not(None))).all()
    finally:
        engine.dispose()
    starts = Counter((r.model, r.tag, r.started_at) for r in q)
    problems += [f"quarantine {k} recorded {n} times" for k, n in starts.items() if n > 1]
    events = Counter(
        (r.round_id, r.tag, r.event, json.dumps(r.detail, sort_keys=True)) for r in audit
    )
    problems += [f"audit {k[:3]} recorded {n} times" for k, n in events.items() if n > 1]
    open_rows = Counter((r.model, r.tag) for r in q if r.released_at is None)
    problems += [f"{k} has {n} open quarantines" for k, n in open_rows.items() if n > 1]
    open_until = {(r.model, r.tag): r.until for r in q if r.released_at is None}
    held = {(s.model, s.tag): s.quarantined_until for s in states if s.quarantined_until}
    for key in open_until.keys() - held.keys():
        problems.append(f"open quarantine {key} but the endpoint state is not quarantined")
    for key in held.keys() - open_until.keys():
        problems.append(f"endpoint state {key} quarantined without an open quarantine row")
    for key in held.keys() & open_until.keys():
        if held[key] != open_until[key]:
            problems.append(f"{key}: state until {held[key]} != quarantine until {open_until[key]}")
    return problems


def notifiable(url: str) -> set[int]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(t.audit).where(t.audit.c.event.in_(NOTIFY_KINDS))).all()
    finally:
        engine.dispose()
    return {r.id for r in rows if r.event != "drift" or (r.detail or {}).get("alert")}


def sqlite_chaos(
    kills: int, rng: random.Random, folder: Path, figures: dict[str, Any]
) -> list[str]:
    violations: list[str] = []
    db_url = f"sqlite:///{folder / 'chaos.db'}"
    receiver = Receiver()
    sim_port, api_port = free_port(), free_port()
    sim_root = f"http://127.0.0.1:{sim_port}"
    config = write_files(folder, db_url, f"{sim_root}/api/v1", receiver.url)
    log = folder / "serve.log"
    sim = subprocess.Popen(
        [str(BIN), "sim", "--scenario", str(folder / "scenario.yaml"), "--port", str(sim_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = Store(db_url)
    recoveries: list[float] = []  # restart -> next round finished, after a kill between rounds
    after_mid_round: list[
        float
    ] = []  # the same after a kill inside a round (its lease must expire)
    mid_round = 0
    running = False
    try:
        wait_http(f"{sim_root}/_sim/state")
        faulty = "bravo"
        set_faulty(sim_root, faulty)
        for cycle in range(kills):
            if cycle and cycle % 5 == 0:  # move the fault: the old host recovers, a new one fails
                faulty = TAGS[(TAGS.index(faulty) + 1) % len(TAGS)]
                set_faulty(sim_root, faulty)
            started = datetime.now(UTC)
            serve = start_serve(config, api_port, log)
            took = wait_round_after(store, started)
            if took is None:
                violations.append(f"cycle {cycle}: no round finished within {ROUND_WAIT_S:g} s")
            else:
                (after_mid_round if running else recoveries).append(took)
            if cycle % 2:  # aim inside a round: wait until one runs, then a random moment of it
                end = time.monotonic() + INTERVAL_MIN * 60 * 3
                while time.monotonic() < end and not is_running(store):
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 0.6))
            else:
                time.sleep(rng.uniform(0.0, INTERVAL_MIN * 60 * 1.5))
            running = is_running(store)
            mid_round += running
            kill(serve)
            found = check_store(db_url)
            violations += [f"cycle {cycle}: {p}" for p in found]
            print(
                f"cycle {cycle:>2}: killed {'mid-round' if running else 'between rounds'}; "
                f"next round after {took if took is None else round(took, 1)} s; "
                f"violations {len(found)}",
                flush=True,
            )
        serve = start_serve(config, api_port, log)  # the final run: the outbox must drain
        try:
            took = wait_round_after(store, datetime.now(UTC))
            if took is None:
                violations.append("final: no round finished")
            else:
                (after_mid_round if running else recoveries).append(took)
            wanted = notifiable(db_url)
            end = time.monotonic() + 180  # a dead notifier's claim (120 s) must run out first
            while time.monotonic() < end and not wanted <= set(receiver.deliveries):
                time.sleep(1)
                wanted = notifiable(db_url)
        finally:
            kill(serve)
        violations += [f"final: {p}" for p in check_store(db_url)]
        lost = sorted(wanted - set(receiver.deliveries))
        duplicated = {i: n for i, n in receiver.deliveries.items() if n > 1}
        violations += [f"notification of audit {i} lost" for i in lost]
        violations += [
            f"notification of audit {i} delivered {n} times" for i, n in duplicated.items()
        ]
        rounds = store.recent_rounds(MODEL, limit=100_000)
        figures.update(
            sqlite_kills=kills,
            sqlite_kills_mid_round=mid_round,
            rounds=len(rounds),
            rounds_finished=sum(r.status == "finished" for r in rounds),
            rounds_abandoned=sum(r.status == "abandoned" for r in rounds),
            quarantines=len(store.quarantines(MODEL, active_only=False)),
            notifications=len(wanted),
            deliveries=sum(receiver.deliveries.values()),
            notifications_lost=len(lost),
            notifications_duplicated=len(duplicated),
            next_round_after_restart_s=spread(recoveries),
            next_round_after_mid_round_kill_s=spread(after_mid_round),
            round_duration_s=spread(
                [
                    (r.finished_at - r.started_at).total_seconds()
                    for r in rounds
                    if r.finished_at and r.status == "finished"
                ]
            ),
        )
    finally:
        store.dispose()
        kill(sim)
        receiver.server.shutdown()
    return violations


def pg_restart() -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        capture_output=True,
        timeout=60,
    )


def postgres_chaos(restarts: int, folder: Path, figures: dict[str, Any]) -> list[str]:
    violations: list[str] = []
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"canary_chaos_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    db_url = admin.url.set(database=name).render_as_string(hide_password=False)
    receiver = Receiver()
    sim_port, api_port = free_port(), free_port()
    sim_root = f"http://127.0.0.1:{sim_port}"
    pg_folder = folder / "pg"
    pg_folder.mkdir()
    config = write_files(pg_folder, db_url, f"{sim_root}/api/v1", receiver.url)
    sim = subprocess.Popen(
        [str(BIN), "sim", "--scenario", str(pg_folder / "scenario.yaml"), "--port", str(sim_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    serve: subprocess.Popen[bytes] | None = None
    store = Store(db_url)
    polls: Counter[str] = Counter()
    stop = threading.Event()
    seen_nonempty = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                r = httpx.get(
                    f"http://127.0.0.1:{api_port}/v1/ignore-list",
                    params={"model": MODEL},
                    timeout=2,
                )
            except httpx.HTTPError:
                polls["no_answer"] += 1
                stop.wait(0.1)
                continue
            polls[f"status_{r.status_code}"] += 1
            if r.status_code == 200:
                body = r.json()
                polls["stale"] += bool(body.get("stale"))
                if body.get("ignore"):
                    seen_nonempty.set()
                elif seen_nonempty.is_set():
                    polls["empty_after_nonempty"] += 1
            stop.wait(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    try:
        wait_http(f"{sim_root}/_sim/state")
        set_faulty(sim_root, "bravo")
        serve = start_serve(config, api_port, pg_folder / "serve.log")
        wait_http(f"http://127.0.0.1:{api_port}/healthz")
        poller.start()
        end = time.monotonic() + 120
        while not seen_nonempty.is_set() and time.monotonic() < end:  # bravo quarantined
            time.sleep(0.2)
        if not seen_nonempty.is_set():
            violations.append("postgres: the quarantine never reached the ignore list")
        for n in range(restarts):
            end = time.monotonic() + 60
            running = None
            while running is None and time.monotonic() < end:
                rows = store.recent_rounds(MODEL, limit=3)
                running = next((r.id for r in rows if r.status == "running"), None)
                time.sleep(0.05)
            restarted_at = datetime.now(UTC)
            pg_restart()
            print(f"postgres restart {n + 1}: during round {running}", flush=True)
            store.dispose()
            if wait_round_after(store, restarted_at, 60) is None:
                violations.append(f"postgres restart {n + 1}: no later round finished")
            if running is not None:
                end = time.monotonic() + 60
                status = "running"
                while status == "running" and time.monotonic() < end:
                    status = next(r for r in store.recent_rounds() if r.id == running).status
                    time.sleep(0.5)
                if status == "running":
                    violations.append(f"round {running} still running after the restart")
                figures[f"pg_restart_{n + 1}_interrupted_round"] = status
        time.sleep(2)
    finally:
        stop.set()
        if poller.is_alive():
            poller.join(5)
        if serve is not None:
            kill(serve)
        kill(sim)
        receiver.server.shutdown()
        store.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    five_xx = sum(n for k, n in polls.items() if k.startswith("status_5"))
    if five_xx:
        violations.append(f"ignore list answered 5xx {five_xx} times")
    if polls["empty_after_nonempty"]:
        violations.append(
            f"ignore list empty {polls['empty_after_nonempty']} times after non-empty"
        )
    figures.update(pg_restarts=restarts, ignore_list_polls=dict(polls))
    return violations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--postgres-restarts", type=int, default=1, choices=(0, 1, 2))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    figures: dict[str, Any] = {}
    violations: list[str] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="canary-chaos-") as folder:
        violations += sqlite_chaos(args.kills, rng, Path(folder), figures)
        if args.postgres_restarts:
            violations += postgres_chaos(args.postgres_restarts, Path(folder), figures)
    figures["wall_s"] = round(time.monotonic() - began, 1)
    figures["violations"] = len(violations)
    for v in violations:
        print(f"VIOLATION {v}")
    print(json.dumps(figures, indent=2, default=str))
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
