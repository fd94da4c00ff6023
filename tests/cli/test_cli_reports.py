"""``canary report add`` and ``canary report list`` against a real store."""

from __future__ import annotations

import json
from typing import Any

from cli_fleet import Fleet
from typer.testing import CliRunner

from canary.cli.main import app

runner = CliRunner()


def run(fleet: Fleet, *args: str) -> Any:
    return runner.invoke(app, ["--config", str(fleet.config), *args], catch_exceptions=False)


def test_report_add_then_list_shows_the_endpoints_outcome_and_note(fleet: Fleet) -> None:
    added = run(
        fleet, "report", "add", "-m", fleet.model, "-s", "stray_tokens", "-p", "charlie",
        "-g", "gen-cli-1", "--note", "a user saw ' ,' before every answer", "--json",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    body = json.loads(added.stdout)
    assert body["endpoints"] == ["charlie/fp8"] and body["outcome"] == "pending"
    again = run(fleet, "report", "add", "-m", fleet.model, "-s", "empty", "-g", "gen-cli-1")
    assert "already reported" in again.stdout
    listed = run(fleet, "report", "list", "-m", fleet.model, "--json")
    [report] = json.loads(listed.stdout)["reports"]
    assert report["note"].startswith("a user saw") and report["symptom"] == "stray_tokens"
    table = run(fleet, "report", "list", "-m", fleet.model)
    assert "charlie/fp8" in table.stdout and "pending" in table.stdout


def test_report_add_refuses_an_unknown_symptom(fleet: Fleet) -> None:
    result = run(fleet, "report", "add", "-m", fleet.model, "-s", "boring", "-p", "alpha")
    assert result.exit_code != 0 and "unknown symptom 'boring'" in result.output
