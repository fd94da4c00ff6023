"""Start-up of the daemon: the store's retry schedule in-process (a fake clock, no sleeping), a
stop while it waits (in-process and as a process), the SQLite path checks, and the retention
job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from polling import wait_for

from canary.config.settings import Settings
from canary.service.ports import free_port
from canary.service.startup import (
    StartupError,
    StoppedDuringStartup,
    open_store,
    sqlite_path_problem,
)

CANARY = Path(sys.executable).parent / "canary"


class FakeTime:
    """A clock that moves only when start-up waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        return False


def test_an_unreachable_store_is_retried_with_doubling_delays_until_the_wait_runs_out() -> None:
    url = f"postgresql+psycopg://canary@127.0.0.1:{free_port()}/canary"
    fake = FakeTime()
    with pytest.raises(StartupError) as caught:
        open_store(Settings(database_url=url, startup_wait_s=10), wait=fake.wait, clock=fake)
    assert fake.waits == [0.5, 1, 2, 4, 2.5]  # the last one is what was left of the 10 s
    assert str(caught.value).startswith(
        "cannot reach the store at postgresql+psycopg://canary@127.0.0.1:"
    )
    assert "(tried 6 times in 10 s)" in str(caught.value)


def test_a_store_tried_once_says_so() -> None:
    url = f"postgresql+psycopg://canary@127.0.0.1:{free_port()}/canary"
    fake = FakeTime()
    with pytest.raises(StartupError, match=r"\(tried once in 0 s\)"):
        open_store(Settings(database_url=url, startup_wait_s=0), wait=fake.wait, clock=fake)
    assert fake.waits == []


def test_a_stop_signal_while_waiting_ends_start_up_at_once() -> None:
    url = f"postgresql+psycopg://canary@127.0.0.1:{free_port()}/canary"
    asked: list[float] = []

    def stopped(seconds: float) -> bool:
        asked.append(seconds)
        return True

    with pytest.raises(StoppedDuringStartup) as caught:
        open_store(Settings(database_url=url, startup_wait_s=60), wait=stopped)
    assert asked == [0.5]
    assert caught.value.code == 0  # a stop asked for is not a failure
    assert not isinstance(caught.value, StartupError)


@pytest.mark.slow
def test_sigterm_while_serve_waits_for_the_store_exits_0(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://canary@127.0.0.1:{free_port()}/canary"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANARY_")}
    env.update(
        CANARY_DATABASE_URL=url,
        CANARY_STARTUP_WAIT_S="60",
        CANARY_LOG_FORMAT="json",
        CANARY_MODELS="acme/wait-1",
        OPENROUTER_API_KEY="sim-key",
    )
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(free_port())],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for("a store_unreachable retry", lambda: "store_unreachable" in log.read_text(), 30)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = log.read_text().splitlines()
    assert code == 0, lines
    stopped = [json.loads(line) for line in lines if '"stopped"' in line]
    assert len(stopped) == 1 and "waiting for the store" in stopped[0]["during"]
    assert not [line for line in lines if line.startswith("canary:") or "Traceback" in line]


def test_a_reachable_store_opens_migrated_without_waiting(tmp_path: Path) -> None:
    fake = FakeTime()
    store = open_store(
        Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}"), wait=fake.wait, clock=fake
    )
    try:
        assert store.current_revision() is not None
    finally:
        store.dispose()
    assert fake.waits == []


def test_sqlite_paths_that_cannot_hold_a_database_are_named(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    assert sqlite_path_problem(f"sqlite:///{tmp_path / 'ok.db'}") is None
    assert sqlite_path_problem(f"sqlite:///{tmp_path / 'nope' / 'c.db'}") == (
        f"directory {tmp_path / 'nope'} does not exist"
    )
    assert sqlite_path_problem(f"sqlite:///{tmp_path / 'a-file' / 'c.db'}") == (
        f"directory {tmp_path / 'a-file'} does not exist"
    )
    assert sqlite_path_problem(f"sqlite:///{tmp_path}") == f"{tmp_path} is a directory"
    assert sqlite_path_problem("postgresql+psycopg://u@h/db") is None
    assert sqlite_path_problem("sqlite://") is None


def test_a_sqlite_file_that_cannot_be_opened_fails_at_once_without_retrying(
    tmp_path: Path,
) -> None:
    link = tmp_path / "dangling.db"  # passes the path checks; SQLite cannot open it
    link.symlink_to(tmp_path / "gone" / "c.db")
    fake = FakeTime()
    with pytest.raises(StartupError) as caught:
        open_store(
            Settings(database_url=f"sqlite:///{link}", startup_wait_s=60),
            wait=fake.wait,
            clock=fake,
        )
    assert fake.waits == []
    assert str(caught.value) == (
        f"cannot open the store at sqlite:///{link}: unable to open database file"
    )


def test_the_daemon_prunes_old_evidence_once_per_lease(tmp_path: Path) -> None:
    from canary.core.model import Contract, Observation, Transport
    from canary.service.daemon import Daemon

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", retention_days=7)
    daemon = Daemon(settings, holder="me:1")
    store = daemon.wiring.store
    try:
        for age_days in (20, 1):
            at = datetime.now(UTC) - timedelta(days=age_days)
            rid = store.claim_round("acme/r-1", at, "me:1", "p", {}, started_at=at)
            assert rid is not None
            observation = Observation(Contract.ttft, "a", Transport.ok, ttft_s=0.5, nonce=str(rid))
            store.record_observations(rid, "acme/r-1", [observation], at)
        daemon.prune_evidence()
        assert [len(store.probes(r.id)) for r in store.recent_rounds("acme/r-1")] == [1, 0]
        lease = store.lease("retention")
        assert lease is not None and lease.holder == "me:1"
    finally:
        daemon.notifier.close()
        store.dispose()
