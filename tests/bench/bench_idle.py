"""Benchmark: what an idle `canary serve` costs between rounds (housekeeping and the focused-check
tick, every 15 s each), on a store seeded by `bench_cli.py --keep`.

    .venv/bin/python tests/bench/bench_idle.py --url URL [--models 200] [--settle 15]
        [--seconds 120] [--profile-models 0] [--pending-report] [--ticks 3] [--no-serve]
        [--no-jobs] [--canary PATH] [--py-spy PATH --py-spy-out FILE]

It starts `canary serve` on the store (rounds every 180 min; OpenRouter at a closed port with a
one-second listing deadline, so that the start-up round ends within minutes, every model's
listing failed; the equality check off), waits for that round's end and `--settle` seconds
more, and samples for `--seconds`: the process's CPU (user + system, from /proc), and, in the
store's database, PostgreSQL's transactions, rows read (pg_stat_database) and its backends' CPU,
each per minute. `--profile-models N`: one [[profiles]] entry covering the first N models (held
to p95 and error-rate limits, so that their figures are read). `--pending-report`: one report
pending on bench/model-0 (POST /v1/reports with a report token; its focused check claimed and
failed at the closed port), as after an app's report. `--py-spy`: py-spy records the daemon
while it is sampled (raw stacks into `--py-spy-out`). Then, in this process, the daemon's two
jobs on the store (`Daemon.housekeeping`, `Daemon.focused_checks`; `--ticks` times each after a
first): the statements each sends and its CPU. Without `--url` it says so and does nothing.
The store keeps its rows; `canary serve` adds its own (the start-up round of every model,
abandoned, its alerts, the published documents, and the report with `--pending-report`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import create_engine, event, make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cli import wait_until_serving  # noqa: E402

CANARY = Path(sys.executable).with_name("canary")
PROBES = Path(__file__).resolve().parents[2] / "probes"
REPORT_TOKEN = "bench-report-token"


def config_text(url: str, models: int, profile_models: int, closed_port: int) -> str:
    text_ = (
        f'database_url = "{url}"\n'
        "interval_minutes = 180\n"
        "retention_days = 3650\n"
        # the start-up round's listings fail at once (a closed port, one second to retry)
        f'[openrouter]\nbase_url = "http://127.0.0.1:{closed_port}/api/v1"\n'
        "listing_deadline_s = 1\n"
        "[equality]\nenabled = false\n"
        f'[[reports.tokens]]\nname = "bench"\ntoken = "{REPORT_TOKEN}"\n'
    )
    if profile_models:
        covered = ", ".join(f'"bench/model-{m}"' for m in range(profile_models))
        text_ += (
            f'[[profiles]]\nname = "fast"\nmodels = [{covered}]\n'
            "max_ttft_p95_s = 2.0\nmax_error_rate = 0.2\n"
        )
    return text_ + "".join(f'[[models]]\nid = "bench/model-{m}"\n' for m in range(models))


def round_over(log: str, models: int) -> bool:
    """Whether the daemon's log says its start-up round is over (each model's line logged, or
    the slot skipped)."""
    done = log.count('"event": "round_done"')
    return done >= models or '"event": "round_skipped"' in log or "round_error" in log


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pg_counters(url: str) -> tuple[int, int, float]:
    """(transactions, rows read, CPU seconds of the backends connected to it) of the store's
    database so far (the backends' CPU when PostgreSQL runs on this machine, else 0)."""
    name = make_url(url).database
    engine = create_engine(make_url(url).set(database="postgres"), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            xacts, rows = conn.execute(
                text(
                    "SELECT xact_commit + xact_rollback, tup_returned + tup_fetched "
                    "FROM pg_stat_database WHERE datname = :name"
                ),
                {"name": name},
            ).one()
            pids = conn.execute(
                text("SELECT pid FROM pg_stat_activity WHERE datname = :name"), {"name": name}
            ).scalars()
            used = 0.0
            for pid in pids:
                try:
                    used += cpu_s(int(pid))
                except OSError:  # gone, or another machine's
                    pass
            return int(xacts), int(rows), used
    finally:
        engine.dispose()


def in_process(url: str, models: int, profile_models: int, ticks: int) -> None:
    """The two jobs called directly: statements and CPU per call."""
    from canary.config.settings import load_settings
    from canary.service.daemon import Daemon

    with tempfile.TemporaryDirectory(prefix="canary-bench-idle-") as tmp:
        config = Path(tmp) / "serve.toml"
        config.write_text(config_text(url, models, profile_models, 9), encoding="utf-8")
        os.environ.setdefault("OPENROUTER_API_KEY", "bench-key")
        os.environ.setdefault("CANARY_PROBES_DIR", str(PROBES))
        daemon = Daemon(load_settings(config))
    statements: list[str] = []

    def count(conn: Connection, cursor: object, statement: str, *rest: object) -> None:
        statements.append(statement)

    engine = daemon.wiring.store.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        for name, job in (
            ("housekeeping", daemon.housekeeping),
            ("focused", daemon.focused_checks),
        ):
            job()  # the first: caches and connections warm
            statements.clear()
            started = time.process_time()
            for _ in range(ticks):
                job()
            used = (time.process_time() - started) / ticks
            print(
                f"  {name:<13} {len(statements) / ticks:7.0f} statements a tick, "
                f"{used * 1000:7.1f} ms of CPU (this process; the database's apart)"
            )
    finally:
        event.remove(engine, "before_cursor_execute", count)
        daemon.wiring.store.dispose()


def serve(args: argparse.Namespace, folder: Path) -> None:
    import httpx

    from canary.service.ports import free_port

    port = free_port()
    config = folder / "serve.toml"
    config.write_text(
        config_text(args.url, args.models, args.profile_models, free_port()), encoding="utf-8"
    )
    env = {
        **os.environ,
        "OPENROUTER_API_KEY": "bench-key",
        "CANARY_LOG_FORMAT": "json",
        "CANARY_PROBES_DIR": str(PROBES),
    }
    log = (folder / "serve.log").open("w")
    process = subprocess.Popen(
        [str(args.canary), "--config", str(config), "serve", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=30) as http:
            wait_until_serving(http, base, process, 180, folder / "serve.log")
            if args.pending_report:
                answer = http.post(
                    f"{base}/v1/reports",
                    headers={"Authorization": f"Bearer {REPORT_TOKEN}"},
                    json={"model": "bench/model-0", "symptom": "broken_json", "provider": "Host 3",
                          "at": datetime.now(UTC).isoformat()},
                )  # fmt: skip
                if answer.status_code not in (200, 201):
                    raise SystemExit(f"POST /v1/reports: {answer.status_code} {answer.text}")
                print(f"  report {answer.json()['id']}: {answer.json()['outcome']}")
            # the start-up round (every model's listing fails) must be over: then idle
            deadline = time.monotonic() + 900
            while not round_over((folder / "serve.log").read_text(), args.models):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the start-up round did not end")
                time.sleep(1)
            time.sleep(args.settle)
            if args.keep_log is not None:
                args.keep_log.write_text((folder / "serve.log").read_text())
            print(f"  sampling PID {process.pid} for {args.seconds:g} s", flush=True)
            spy = None
            if args.py_spy is not None:  # its own CPU is not the daemon's: sampled apart
                spy = subprocess.Popen(
                    [str(args.py_spy), "record", "-p", str(process.pid), "-d", f"{args.seconds:g}",
                     "-r", "100", "-f", "raw", "-o", str(args.py_spy_out)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            cpu0, pg0, t0 = cpu_s(process.pid), pg_counters(args.url), time.monotonic()
            time.sleep(args.seconds)
            cpu1, pg1, t1 = cpu_s(process.pid), pg_counters(args.url), time.monotonic()
            if spy is not None:
                spy.wait(timeout=120)
        minutes = (t1 - t0) / 60
        used = (cpu1 - cpu0) / minutes
        backends = (pg1[2] - pg0[2]) / minutes
        print(
            f"  canary serve: {used:.2f} s of CPU a minute ({used / 60:.1%} of a core); "
            f"PostgreSQL: {(pg1[0] - pg0[0]) / minutes:,.0f} transactions and "
            f"{(pg1[1] - pg0[1]) / minutes:,.0f} rows read a minute, its backends "
            f"{backends:.2f} s of CPU a minute (load average {os.getloadavg()[0]:.2f})"
        )
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a store seeded by bench_cli.py --keep")
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--profile-models", type=int, default=0)
    parser.add_argument("--pending-report", action="store_true")
    parser.add_argument("--no-serve", action="store_true", help="the in-process figures only")
    parser.add_argument("--no-jobs", action="store_true", help="the serve figures only")
    parser.add_argument("--canary", type=Path, default=CANARY)
    parser.add_argument("--py-spy", type=Path, help="py-spy's command: record while sampling")
    parser.add_argument("--py-spy-out", type=Path, default=Path("idle-stacks.txt"))
    parser.add_argument("--keep-log", type=Path, help="copy the daemon's log there")
    args = parser.parse_args()
    if args.url is None:
        print("bench_idle.py: give --url, a store seeded by bench_cli.py --keep (see --help)")
        return
    print(
        f"{args.models} models, profile covering {args.profile_models}, "
        f"{'one report pending' if args.pending_report else 'no report pending'}"
    )
    if not args.no_serve:  # first: it posts the pending report the jobs then see
        with tempfile.TemporaryDirectory(prefix="canary-bench-idle-") as tmp:
            serve(args, Path(tmp))
    if not args.no_jobs:
        in_process(args.url, args.models, args.profile_models, args.ticks)


if __name__ == "__main__":
    main()
