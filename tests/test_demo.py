"""`canary demo`: the README's first command, end to end on the showcase scenario."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_runner import CliRunner
from polling import wait_for

from canary.cli.main import app
from canary.config.settings import Settings
from canary.service.demo import canary_command, run_demo
from canary.service.ports import free_port
from canary.store.repository import Store

# The showcase's rounds run on the real clock (seconds each, more on a loaded machine); some
# tests run `canary demo` as a process.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

FAULTY = {"echo", "foxtrot/fp8", "golf"}  # stray tokens, pt→es drift, broken schema
HEALTHY = {"alpha", "bravo", "charlie/fp8"}
CONTROL = "filterhost"  # the positive control: filters role-play
CANARY = str(Path(sys.executable).parent / "canary")
MODEL = "acme/roleplay-1"


def test_the_demo_quarantines_the_faulty_hosts_and_publishes_the_list(tmp_path: Path) -> None:
    lines: list[str] = []
    lists = asyncio.run(
        run_demo(
            Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}"),
            rounds=2,
            port=0,
            say=lines.append,
            folder=tmp_path,
            pause_s=0,
        )
    )
    published = set(lists["acme/roleplay-1"])
    assert FAULTY <= published
    assert not HEALTHY & published
    story = "\n".join(lines)
    assert "QUARANTINE foxtrot/fp8" in story
    assert "es in" in story  # the drift is explained, not just flagged
    assert "round 2/2" in story
    # the control filters: never a quarantine of its own (a filtered answer is no schema break),
    # and published from the first round on as what it is
    assert CONTROL in published and f"QUARANTINE {CONTROL}" not in story
    assert f"({CONTROL}: positive control, known to filter)" in story
    store = Store(f"sqlite:///{tmp_path / 'canary.db'}")
    try:
        assert not [q for q in store.quarantines("acme/roleplay-1", active_only=False)
                    if q.tag == CONTROL]  # fmt: skip
    finally:
        store.dispose()


def test_demo_command_runs_from_the_cli_and_leaves_a_store_to_inspect(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no canary.toml here: the embedded defaults
    folder = tmp_path / "demo"
    result = CliRunner().invoke(
        app,
        ["demo", "--rounds", "2", "--port", "0", "--pause", "0", "--exit", "--dir", str(folder)],
    )
    assert result.exit_code == 0, result.output
    assert "round 2/2" in result.output
    assert "QUARANTINE foxtrot/fp8" in result.output
    assert "es in" in result.output  # the drift is explained, not just flagged
    assert "status page  http://127.0.0.1:" in result.output
    assert not (tmp_path / "canary.db").exists()  # the demo keeps its store to itself
    assert (folder / "canary.db").is_file()
    # the command as a shell runs it: the venv's own canary when that is not on PATH
    line = f"  {canary_command()} --config {folder / 'canary.toml'} status"
    assert f"the store is kept in {folder}; inspect it afterwards with:\n{line}\n" in result.output
    ran = subprocess.run(line.split(), capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    # the printed line works on the real clock, after the demo
    args = line.split()[1:]
    status = CliRunner().invoke(app, [*args, "--json"])
    assert status.exit_code == 0, status.output
    (model,) = json.loads(status.stdout)["models"]
    assert FAULTY <= set(model["ignore_list"]["ignore"])
    assert not HEALTHY & set(model["ignore_list"]["ignore"])


def test_the_written_settings_give_the_policy_version_the_demo_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    # a default the demo revalidates (10 -> 10.0) and a setting it takes from the environment
    monkeypatch.setenv("CANARY_TTFT_THRESHOLD_S", "8")
    folder = tmp_path / "demo"
    args = ["demo", "--rounds", "1", "--port", "0", "--pause", "0", "--exit", "--dir", str(folder)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    monkeypatch.delenv("CANARY_TTFT_THRESHOLD_S")  # the operator's later shell
    config = ["--config", str(folder / "canary.toml")]
    with Store(f"sqlite:///{folder / 'canary.db'}") as store:
        (recorded,) = {r.policy_version for r in store.recent_rounds(None, 10)}
    status = CliRunner().invoke(app, [*config, "status", "--json"])
    (model,) = json.loads(status.stdout)["models"]
    assert model["ignore_list"]["policy_version"] == recorded
    computed = CliRunner().invoke(app, [*config, "ignore-list", "-m", model["model"], "--json"])
    assert computed.exit_code == 0, computed.output
    assert json.loads(computed.stdout)["policy_version"] == recorded


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_without_exit_the_demo_serves_on_until_ctrl_c_or_sigterm(
    tmp_path: Path, stop: signal.Signals
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [CANARY, "demo", "--rounds", "1", "--pause", "0", "--port", str(port), "--dir", "d"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # as in a terminal's foreground: a suite started in the background (`cmd &` in a script)
        # hands its children SIGINT ignored, and a program keeps it so, as it should
        preexec_fn=_default_sigint,
    )
    try:
        assert process.stdout is not None
        told = []
        for line in process.stdout:
            told.append(line)
            if "until Ctrl-C" in line:
                break
        assert any("until Ctrl-C" in line for line in told), "".join(told)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "acme/roleplay-1" in page.text
        process.send_signal(stop)
        try:
            rest, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired as late:
            process.kill()
            left, _ = process.communicate()
            raise AssertionError(f"still running 30 s after {stop.name}:\n{left}") from late
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert f"stopped; the store stays in {tmp_path / 'd'}" in rest
    assert (tmp_path / "d" / "canary.db").is_file()


def test_a_busy_port_falls_back_to_a_free_one() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        assert free_port(busy) != busy


class ServingDemo:
    """``run_demo`` with ``keep_serving``, on an event loop of its own in a thread; ``stop``
    cancels it as Ctrl-C does."""

    def __init__(self, folder: Path, **options: Any) -> None:
        self.lines: list[str] = []
        self.loop = asyncio.new_event_loop()
        demo = run_demo(
            Settings(database_url=f"sqlite:///{folder / 'unused.db'}"),
            rounds=1,
            port=0,
            say=self.lines.append,
            folder=folder,
            pause_s=0,
            keep_serving=True,
            **options,
        )
        self.task = self.loop.create_task(demo)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        told = wait_for("the demo to serve on", self._serving, timeout_s=120)
        self.base_url = told.split("status page  ")[1].split("/ ")[0]

    def _run(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self.task)

    def _serving(self) -> str | None:
        if self.task.done():
            raise AssertionError("the demo ended:\n" + "\n".join(self.lines))
        if not any("until Ctrl-C" in line for line in self.lines):
            return None
        return next(line for line in self.lines if "status page  " in line)

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.base_url + path, params=params, timeout=10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout=30)
        self.loop.close()


class RealClock:
    """The demo's real clock, moved by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_after_its_rounds_the_demo_page_tells_time_on_the_real_clock(tmp_path: Path) -> None:
    real = RealClock(datetime(2026, 11, 29, 12, 7, 30, tzinfo=UTC))
    demo = ServingDemo(tmp_path, real_clock=real)
    try:
        page = demo.get("/").text
        assert "last round under 1 min ago · no round scheduled" in page
        real.now += timedelta(minutes=25)
        page = demo.get("/").text
        assert "last round 25 min ago · no round scheduled" in page
        assert "2026-11-29T12:32:30Z" in page
    finally:
        demo.stop()


def test_the_serving_demo_follows_its_store_written_by_the_operator_commands(
    tmp_path: Path,
) -> None:
    demo = ServingDemo(tmp_path, refresh_every_s=0.1)
    try:
        assert "alpha" not in demo.get("/v1/ignore-list", model=MODEL).json()["ignore"]
        config = tmp_path / "canary.toml"
        assert any(f"canary --config {config} exclude add" in line for line in demo.lines)
        added = subprocess.run(
            [CANARY, "--config", str(config), "exclude", "add", "-m", MODEL, "-p", "alpha",
             "-r", "incident 3: slow in eu"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr

        def listed() -> list[str] | None:
            ignore = demo.get("/v1/ignore-list", model=MODEL).json()["ignore"]
            return ignore if "alpha" in ignore else None

        wait_for("the exclusion on the demo's list", listed, timeout_s=30)
        providers = demo.get("/v1/providers", model=MODEL).json()["providers"]
        alpha = next(p for p in providers if p["provider"] == "alpha")
        assert alpha["state"] == "excluded"
        [entry] = alpha["exclusions"]
        assert (entry["layer"], entry["reason"]) == ("runtime", "incident 3: slow in eu")
    finally:
        demo.stop()


def test_a_taken_port_is_said_not_silently_moved(tmp_path: Path) -> None:
    lines: list[str] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        asked = taken.getsockname()[1]
        asyncio.run(
            run_demo(
                Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}"),
                rounds=1,
                port=asked,
                say=lines.append,
                folder=tmp_path,
                pause_s=0,
                keep_serving=False,
            )
        )
    moved = [line for line in lines if line.startswith(f"port {asked} is taken: serving on ")]
    assert len(moved) == 1, lines


def test_the_command_printed_is_one_a_shell_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # the venv not activated: its canary is not on PATH
    assert canary_command() == CANARY
    monkeypatch.setenv("PATH", str(Path(CANARY).parent))
    assert canary_command() == "canary"
