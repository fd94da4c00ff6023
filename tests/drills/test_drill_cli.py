"""`canary drill --json` through typer's runner: one JSON object per line, a summary last."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_runner import CliRunner
from drill_kit import MODEL, advance, fault, provider, scenario

from canary.cli.main import app


@pytest.fixture(autouse=True)
def _own_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("CANARY_DATABASE_URL", "CANARY_CONFIG", "CANARY_MODELS", "CANARY_MODE"):
        monkeypatch.delenv(var, raising=False)
    yield
    from canary.service.logs import configure_logging

    configure_logging()  # the command pointed structlog at the runner's stream, now closed


def _files(tmp_path: Path, timeline: list[dict[str, object]]) -> tuple[Path, Path]:
    config = tmp_path / "canary.toml"
    config.write_text('languages = ["en", "es"]\nlog_format = "json"\n', encoding="utf-8")
    fleet = scenario(
        provider("alpha"),
        provider("bravo"),
        provider("charlie"),
        provider("delta", fault("garbage_prefix")),
        timeline=timeline,
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    return config, path


@pytest.mark.slow  # a whole drill for its JSON lines; the summary's floor: test_drill_safety
def test_drill_json_prints_one_object_per_line_and_a_summary_last(tmp_path: Path) -> None:
    config, path = _files(tmp_path, [advance(3, 30)])
    result = CliRunner().invoke(
        app,
        [
            "--config",
            str(config),
            "drill",
            "--scenario",
            str(path),
            "--rounds",
            "3",
            "--mode",
            "enforce",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {"round", "at", "event", "model", "provider"} <= set(lines[0])
    assert [ln["event"] for ln in lines].count("verdict") == 12  # 4 endpoints x 3 rounds
    (quarantine,) = [ln for ln in lines if ln["event"] == "quarantine"]
    assert quarantine["round"] == 2 and quarantine["provider"] == "delta"
    assert quarantine["until"] == "2026-01-06T00:30:00Z"
    # the clock entry moved round 3 thirty hours on: the 1-day quarantine has expired
    (release,) = [ln for ln in lines if ln["event"] == "release"]
    assert release["round"] == 3 and release["why"] == "expired"
    assert release["at"] == "2026-01-06T07:00:00Z"
    summary = lines[-1]
    assert summary["event"] == "summary" and summary["mode"] == "enforce"
    assert summary["ignore"] == {MODEL: []}
    assert all(ln["event"] != "summary" for ln in lines[:-1])


def test_drill_rejects_a_bad_clock_entry_with_one_readable_line(tmp_path: Path) -> None:
    config, path = _files(tmp_path, [{"round": 2, "advance_hours": -3}])
    result = CliRunner().invoke(
        app, ["--config", str(config), "drill", "--scenario", str(path), "--rounds", "2"]
    )
    assert result.exit_code == 2
    assert "timeline.0: field 'advance_hours': should be at least 0, not -3" in result.stderr
    assert result.stdout == ""
