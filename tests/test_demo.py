"""`canary demo`: the README's first command, end to end on the showcase scenario."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from canary.cli.main import app
from canary.demo import run_demo
from canary.net import free_port
from canary.settings import Settings

FAULTY = {"echo", "foxtrot/fp8", "golf"}  # stray tokens, pt→es drift, broken schema
HEALTHY = {"alpha", "bravo", "charlie/fp8"}


def test_the_demo_quarantines_the_faulty_hosts_and_publishes_the_list(tmp_path: Path) -> None:
    lines: list[str] = []
    lists = asyncio.run(
        run_demo(
            Settings(database_url=f"sqlite:///{tmp_path / 'unused.db'}"),
            rounds=2,
            port=0,
            say=lines.append,
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


def test_demo_command_runs_from_the_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no canary.toml here: the embedded defaults
    result = CliRunner().invoke(app, ["demo", "--rounds", "1", "--port", "0", "--pause", "0"])
    assert result.exit_code == 0, result.output
    assert "round 1/1" in result.output
    assert "status page  http://127.0.0.1:" in result.output
    assert not (tmp_path / "canary.db").exists()  # the demo keeps its store to itself


def test_a_busy_port_falls_back_to_a_free_one() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        assert free_port(busy) != busy
