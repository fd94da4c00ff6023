"""`canary serve` as a process: signals, a taken port, start-up errors.

Real processes, a real simulator and real stores. The tests wait on the running system with
deadlines (tests/polling.py); nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import round_of
from polling import wait_for

from canary.core.model import iso_utc
from canary.core.plan import slot_length, slot_of
from canary.rounds.scheduler import ROUND_LEASE
from canary.service.ports import free_port
from canary.sim.server import RunningSimulator, start_simulator
from canary.store.repository import Store
from canary.store.rows import RoundRow

# Every test starts `canary serve`, whose start loads the language models (seconds, more on a
# loaded machine) before its rounds run on the real clock.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CANARY = Path(sys.executable).parent / "canary"
KEY = "sim-lifecycle-key"
SLOW = "acme/slow-1"  # its round outlasts a short grace
QUICK = "acme/quick-1"  # its round lasts a few seconds


def _provider(tag: str, ttft_ms: int) -> dict[str, Any]:
    return {"tag": tag, "ttft_ms": ttft_ms, "tokens_per_second": 3000}


SCENARIO = {
    "seed": 3,
    "models": [
        {"id": SLOW, "providers": [_provider(t, 25_000) for t in ("a", "b")]},
        {"id": QUICK, "providers": [_provider(t, 1_200) for t in ("a", "b")]},
    ],
}


@dataclass
class Serve:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines()

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines() if line.startswith("{")]

    def serving(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).is_success
        except httpx.HTTPError:
            return False


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with start_simulator(SCENARIO, detector=False) as sim:
        yield sim


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANARY_")}
    env.pop("OPENROUTER_API_KEY", None)
    env.update(CANARY_LOG_FORMAT="json", CANARY_LANGUAGES="en", OPENROUTER_API_KEY=KEY, **extra)
    return env


def _serve(tmp_path: Path, env: dict[str, str], port: int | None = None) -> Serve:
    port = port or free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Serve(process, port, log)


def _run_env(sim: RunningSimulator, url: str, model: str, grace_s: str) -> dict[str, str]:
    return _env(
        CANARY_DATABASE_URL=url,
        CANARY_MODELS=model,
        CANARY_OPENROUTER_BASE_URL=sim.base_url,
        CANARY_SHUTDOWN_GRACE_S=grace_s,
    )


def _running(store: Store, model: str) -> RoundRow | None:
    return next((r for r in store.recent_rounds(model) if r.status == "running"), None)


def _stopped(serve: Serve, timeout_s: float = 60) -> int:
    try:
        return serve.process.wait(timeout=timeout_s)
    finally:
        if serve.process.poll() is None:
            serve.process.kill()
            serve.process.wait()


@pytest.fixture
def store(sqlite_store: Store) -> tuple[Store, str]:
    """A store of each test's own (tests/conftest.py), and its URL for the daemon."""
    return sqlite_store, sqlite_store.url


def test_sigterm_past_the_grace_abandons_the_round_frees_the_lease_and_exits_0(
    simulator: RunningSimulator, store: tuple[Store, str], tmp_path: Path
) -> None:
    s, url = store
    serve = _serve(tmp_path, _run_env(simulator, url, SLOW, grace_s="0.5"))
    try:
        running = wait_for("the round to start", lambda: _running(s, SLOW), 60)
        serve.process.send_signal(signal.SIGTERM)
        assert _stopped(serve) == 0, serve.log.read_text()
    finally:
        _stopped(serve)
    row = round_of(s, running.id)
    assert row.status == "abandoned" and row.detail == {"why": "shutdown"}
    assert s.lease(ROUND_LEASE) is None  # the next slot is free for any replica
    # it decided nothing: no verdict, no state, no audit record
    assert s.round_verdicts(running.id) == {}
    assert s.load_states(SLOW) == {}
    assert s.audit(model=SLOW) == []
    kinds = [e["event"] for e in serve.events()]
    assert kinds.index("stopping") < kinds.index("round_abandoned") < kinds.index("stopped")
    assert "round_done" not in kinds
    assert "Traceback" not in serve.log.read_text()


def test_sigterm_within_the_grace_lets_the_round_finish_and_logs_its_summary(
    simulator: RunningSimulator, store: tuple[Store, str], tmp_path: Path
) -> None:
    s, url = store
    serve = _serve(tmp_path, _run_env(simulator, url, QUICK, grace_s="60"))
    try:
        running = wait_for("the round to start", lambda: _running(s, QUICK), 60)
        serve.process.send_signal(signal.SIGTERM)
        assert _stopped(serve) == 0, serve.log.read_text()
    finally:
        _stopped(serve)
    row = round_of(s, running.id)
    assert row.status == "finished"
    assert set(s.round_verdicts(running.id)) == {"a", "b"}
    assert s.lease(ROUND_LEASE) is None
    (done,) = [e for e in serve.events() if e["event"] == "round_done"]
    assert done["model"] == QUICK and done["round_id"] == running.id
    assert done["verdicts"] == {"pass": 2} and done["decisions"] == []
    assert done["duration_s"] > 0 and "cost_usd" in done
    listening = next(e for e in serve.events() if e["event"] == "listening")
    assert listening["url"] == f"http://127.0.0.1:{serve.port}/"


def test_sigint_between_rounds_exits_0_and_a_slot_run_elsewhere_is_not_reported_as_run(
    simulator: RunningSimulator, store: tuple[Store, str], tmp_path: Path
) -> None:
    s, url = store
    # another replica already ran this slot
    other = s.claim_round(QUICK, slot_of(datetime.now(UTC), 30), "elsewhere:1", "p", {})
    assert other is not None
    s.finish_round(other, "finished")
    serve = _serve(tmp_path, _run_env(simulator, url, QUICK, grace_s="20"))
    try:
        wait_for(
            "the round job to run",
            lambda: any(e["event"] == "round_skipped" for e in serve.events()),
            60,
        )
        serve.process.send_signal(signal.SIGINT)
        assert _stopped(serve) == 0, serve.log.read_text()
    finally:
        _stopped(serve)
    kinds = [e["event"] for e in serve.events()]
    assert "round_done" not in kinds
    skipped = next(e for e in serve.events() if e["event"] == "round_skipped")
    assert skipped["why"] == "this slot already ran elsewhere"
    assert [r.id for r in s.recent_rounds(QUICK)] == [other]
    assert "Traceback" not in serve.log.read_text()


def test_a_taken_port_fails_at_once_in_one_line_and_leaves_another_holders_round_alone(
    store: tuple[Store, str], tmp_path: Path
) -> None:
    s, url = store
    now = datetime.now(UTC)
    assert s.try_acquire_lease(ROUND_LEASE, "other-host:1", now, 3600)
    theirs = s.claim_round(QUICK, slot_of(now, 30), "other-host:1", "p", {}, started_at=now)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = _env(CANARY_DATABASE_URL=url, CANARY_MODELS=QUICK)
        result = subprocess.run(
            [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        f"canary: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    assert round_of(s, theirs or 0).status == "running"
    lease = s.lease(ROUND_LEASE)
    assert lease is not None and lease.holder == "other-host:1"


def _startup(tmp_path: Path, **extra: str) -> tuple[int, list[str]]:
    result = subprocess.run(
        [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(free_port())],
        env=_env(CANARY_MODELS=QUICK, **extra),
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    text = result.stderr.decode()
    assert "Traceback" not in text
    return result.returncode, text.splitlines()


def test_a_sqlite_path_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "canary.db"
    code, lines = _startup(tmp_path, CANARY_DATABASE_URL=f"sqlite:///{missing}")
    assert code == 1
    assert lines[-1] == (
        f"canary: cannot open the store at sqlite:///{missing}: "
        f"directory {missing.parent} does not exist"
    )
    assert not missing.parent.exists()


def test_an_unreachable_postgres_is_retried_then_one_line_without_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql+psycopg://canary:pw-not-shown@127.0.0.1:{free_port()}/canary"
    # 3 s: two tries at least (0.5 s apart) even when a loaded machine slows the first
    code, lines = _startup(tmp_path, CANARY_DATABASE_URL=url, CANARY_STARTUP_WAIT_S="3")
    assert code == 1
    assert lines[-1].startswith(
        "canary: cannot reach the store at postgresql+psycopg://canary:***@127.0.0.1:"
    )
    assert "(tried " in lines[-1]
    retries = [json.loads(line) for line in lines if '"store_unreachable"' in line]
    assert len(retries) >= 2  # 0.5 s, then 1 s, then what is left
    assert all("pw-not-shown" not in line for line in lines)


def test_bad_settings_are_one_line(tmp_path: Path) -> None:
    code, lines = _startup(tmp_path, CANARY_MODE="sometimes")
    assert code == 2
    assert lines == [
        "canary: environment CANARY_MODE: setting 'mode': should be one of 'observe', 'enforce', not 'sometimes'"
    ]


def _slot_chain(rounds: list[RoundRow], length: timedelta, size: int) -> list[RoundRow] | None:
    """``size`` finished rounds of consecutive slots, if there are."""
    finished = sorted((r for r in rounds if r.status == "finished"), key=lambda r: r.scheduled_at)
    for i in range(len(finished) - size + 1):
        chain = finished[i : i + size]
        if all(
            b.scheduled_at - a.scheduled_at == length
            for a, b in zip(chain, chain[1:], strict=False)
        ):
            return chain
    return None


def test_a_round_longer_than_its_slot_is_followed_at_once_by_the_next_slots_round(
    simulator: RunningSimulator, store: tuple[Store, str], tmp_path: Path
) -> None:
    """The scheduler skips a slot's start while a round runs; the daemon runs that slot as soon
    as the round ends, so rounds longer than the interval go on back to back, not every other
    slot. QUICK's answers take 1.2 s and its rounds about 3 s, longer than a 2.1 s slot."""
    s, url = store
    interval = 0.035
    env = _run_env(simulator, url, QUICK, grace_s="5")
    serve = _serve(tmp_path, {**env, "CANARY_INTERVAL_MINUTES": str(interval)})
    length = slot_length(interval)
    try:
        chain = wait_for(
            "three rounds of consecutive slots",
            lambda: _slot_chain(s.recent_rounds(QUICK, limit=50), length, 3),
            90,
        )
    finally:
        serve.process.send_signal(signal.SIGTERM)
        _stopped(serve)
    rounds = s.recent_rounds(QUICK, limit=50)
    slots = [r.scheduled_at for r in rounds]
    assert len(slots) == len(set(slots))  # never two rounds of one slot
    for earlier, later in zip(chain, chain[1:], strict=False):
        assert earlier.finished_at is not None
        assert earlier.finished_at - earlier.started_at > length  # outlasted its slot
        assert later.started_at > later.scheduled_at  # so it was run late, after it
    catching_up = [e for e in serve.events() if e["event"] == "round_catching_up"]
    assert {e["slot"] for e in catching_up} >= {iso_utc(r.scheduled_at) for r in chain[1:]}
    assert "Traceback" not in serve.log.read_text()
