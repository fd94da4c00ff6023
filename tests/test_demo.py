"""`canary demo`: the README's first command, end to end on the showcase scenario."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from canary.cli.main import app
from canary.demo import run_demo
from canary.net import free_port
from canary.settings import Settings
from canary.store.repository import Store

FAULTY = {"echo", "foxtrot/fp8", "golf"}  # stray tokens, pt→es drift, broken schema
HEALTHY = {"alpha", "bravo", "charlie/fp8"}
CANARY = str(Path(sys.executable).parent / "canary")


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
    assert "status page  http://127.0.0.1:" in result.output
    assert not (tmp_path / "canary.db").exists()  # the demo keeps its store to itself
    assert (folder / "canary.db").is_file()
    line = f"  canary --config {folder / 'canary.toml'} status"
    assert f"the store is kept in {folder}; inspect it afterwards with:\n{line}\n" in result.output
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
