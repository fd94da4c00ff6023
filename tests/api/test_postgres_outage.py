"""A real `canary serve` on a PostgreSQL cluster this test owns: stop it, start it again.

With the database stopped, `GET /v1/ignore-list` keeps answering the last good list marked
`"stale": true` (never a 5xx, never an empty or partial list); once it is back, the daemon serves a
fresh list and runs rounds again with no manual step.

The cluster is private (its own data directory, port and socket directory; the shared server is
never touched). initdb refuses root, so the cluster runs as the `postgres` OS user through
`runuser`; without root, runuser or the PostgreSQL binaries the test is skipped, unless
CANARY_REQUIRE_POSTGRES=1, in which case it fails. Real processes, a real simulator, a round every
1.8 s: the test polls with short waits, every loop bounded by a deadline.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from polling import wait_for

from canary.service.ports import free_port
from canary.sim.server import RunningSimulator, start_simulator
from canary.store.repository import Store

# A private cluster (initdb) and `canary serve` start, then the outage is held through rounds:
# about 15 s, more on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(90)]

MODEL = "acme/outage-1"
FAULTY = "delta"
CANARY = Path(sys.executable).parent / "canary"


def _provider(tag: str, *faults: dict[str, Any]) -> dict[str, Any]:
    return {"tag": tag, "ttft_ms": 5, "tokens_per_second": 50000, "faults": list(faults)}


# Three healthy hosts keep the capacity floor (2) satisfied once the faulty one is quarantined.
SCENARIO = {
    "seed": 11,
    "models": [
        {
            "id": MODEL,
            "providers": [
                _provider("alpha"),
                _provider("bravo"),
                _provider("charlie"),
                _provider(FAULTY, {"kind": "garbage_prefix", "rate": 1.0}),
            ],
        }
    ],
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CANARY_REQUIRE_POSTGRES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _postgres_bin() -> Path | None:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


@dataclass
class PrivateCluster:
    """A throwaway PostgreSQL cluster run as the `postgres` OS user."""

    bindir: Path
    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def _checked(self, *args: str) -> None:
        done = self._run(*args)
        if done.returncode != 0:
            log = self.root / "postgres.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise AssertionError(f"{args[0]} failed: {done.stderr or done.stdout}\n{tail}")

    def init(self) -> None:
        self._checked(
            str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        sockdir = self.root / "sock"
        options = f"-p {self.port} -k {sockdir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._checked(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "postgres.log"),
            "-o", options, "-w", "-t", "30", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._checked(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        status = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "status")
        return status.returncode == 0


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    bindir = _postgres_bin()
    if bindir is None:
        _unavailable("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql")
    if os.geteuid() != 0:
        _unavailable("running a private PostgreSQL as the postgres user needs root")
    if shutil.which("runuser") is None:
        _unavailable("runuser is not available")
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        _unavailable("there is no postgres OS user to run the private cluster")
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="canary-pg-"))
    for path in (root, root / "sock"):
        path.mkdir(exist_ok=True)
        os.chown(path, account.pw_uid, account.pw_gid)
        path.chmod(0o700)
    cluster = PrivateCluster(bindir, root, free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        if cluster.data.exists() and cluster.running():
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def simulator() -> Iterator[RunningSimulator]:
    with start_simulator(SCENARIO) as sim:
        yield sim


def _serve(url: str, sim: RunningSimulator, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANARY_")}
    env.update(
        CANARY_DATABASE_URL=url,
        CANARY_MODELS=MODEL,
        CANARY_MODE="enforce",
        CANARY_LANGUAGES="en",
        CANARY_INTERVAL_MINUTES="0.03",  # a round every 1.8 s; each ends with a list refresh
        CANARY_LEASE_TTL_S="2",
        CANARY_LEASE_RENEW_S="0.5",
        CANARY_OPENROUTER_BASE_URL=sim.base_url,
        OPENROUTER_API_KEY="sim-outage-key",
        CANARY_LOG_FORMAT="json",
    )
    port = free_port()
    with (workdir / "serve.log").open("wb") as out:
        process = subprocess.Popen(
            [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, port


def _finished_round_ids(url: str) -> list[int]:
    with Store(url) as store:
        return [r.id for r in store.recent_rounds(MODEL, limit=200) if r.status == "finished"]


def test_postgres_stopped_serves_the_last_list_stale_then_recovers_unattended(
    cluster: PrivateCluster, simulator: RunningSimulator, tmp_path: Path
) -> None:
    process, port = _serve(cluster.url, simulator, tmp_path)
    base = f"http://127.0.0.1:{port}"

    def ignore_list() -> httpx.Response:
        assert process.poll() is None, (tmp_path / "serve.log").read_text(errors="replace")
        return httpx.get(f"{base}/v1/ignore-list", params={"model": MODEL}, timeout=5)

    def fresh_with_faulty() -> dict[str, Any] | None:
        try:
            response = ignore_list()
        except httpx.TransportError:
            return None  # still starting
        if response.status_code != 200:
            return None
        doc: dict[str, Any] = response.json()
        return doc if FAULTY in doc["ignore"] and not doc["stale"] else None

    try:
        before = wait_for("the faulty provider to be quarantined", fresh_with_faulty, 40)
        assert before["ignore"] == [FAULTY] and before["provider"] == {"ignore": [FAULTY]}
        assert [(e["provider"], e["layer"]) for e in before["entries"]] == [(FAULTY, "quarantine")]
        last_round = max(_finished_round_ids(cluster.url))

        cluster.stop()
        served: list[dict[str, Any]] = []

        def stale_list() -> dict[str, Any] | None:
            response = ignore_list()
            assert response.status_code == 200, response.text  # never a 5xx, never a 404
            doc: dict[str, Any] = response.json()
            served.append(doc)
            # never empty, never partial: exactly the last good list, whatever the refresh saw
            assert doc["ignore"] == before["ignore"] and doc["entries"] == before["entries"]
            assert doc["provider"] == before["provider"]
            return doc if doc["stale"] else None

        outage = wait_for("the served list to turn stale", stale_list, 15)
        assert outage["generated_at"] >= before["generated_at"]  # the time of the last good read
        # keep asking through several failed rounds and refreshes: it stays stale and whole
        hold_until = time.monotonic() + 4
        while time.monotonic() < hold_until:
            doc = stale_list()
            assert doc is not None and doc["generated_at"] == outage["generated_at"]
        assert len(served) > 10
        ready = httpx.get(f"{base}/readyz", timeout=5)
        assert ready.status_code == 503  # the daemon knows the store is gone

        cluster.start()  # and nothing else: no restart, no call to the daemon

        def fresh_again() -> dict[str, Any] | None:
            response = ignore_list()
            assert response.status_code == 200, response.text
            doc: dict[str, Any] = response.json()
            assert doc["ignore"] == before["ignore"] and doc["entries"] == before["entries"]
            return None if doc["stale"] else doc

        after = wait_for("the served list to be fresh again", fresh_again, 20)
        assert after["generated_at"] > outage["generated_at"]
        new_rounds = wait_for(
            "a round to finish after the restart",
            lambda: [i for i in _finished_round_ids(cluster.url) if i > last_round],
            20,
        )
        assert new_rounds
        assert process.poll() is None
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
