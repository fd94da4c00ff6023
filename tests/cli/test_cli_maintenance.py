"""``canary maintenance add|list|remove`` against a real store (SQLite and PostgreSQL), and the
window in ``canary status``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cli_fleet import Fleet
from cli_runner import CliRunner

from canary.cli.main import app

runner = CliRunner()


def run(fleet: Fleet, *args: str) -> Any:
    return runner.invoke(app, ["--config", str(fleet.config), *args], catch_exceptions=False)


def add(fleet: Fleet, provider: str = "alpha", *extra: str) -> Any:
    until = (datetime.now(UTC) + timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
    args = ["--model", fleet.model, "-p", provider, "--reason", "planned upgrade"]
    return run(fleet, "maintenance", "add", *args, "--until", until, *extra)


def test_add_list_status_remove_round_trip_with_audit(fleet: Fleet) -> None:
    added = add(fleet)
    assert added.exit_code == 0, added.output
    assert "alpha of " in added.stdout and "under maintenance until" in added.stdout
    window = int(added.stdout.split("(id ")[1].split(")")[0])
    listed = run(fleet, "maintenance", "list", "--model", fleet.model, "--json")
    [entry] = json.loads(listed.stdout)["maintenance"]
    assert (entry["id"], entry["provider"], entry["layer"]) == (window, "alpha", "maintenance")
    table = run(fleet, "maintenance", "list")
    assert "maintenance windows" in table.stdout and "planned upgrade" in table.stdout
    status = json.loads(run(fleet, "status", "--model", fleet.model, "--json").stdout)
    [alpha] = [p for p in status["models"][0]["providers"] if p["provider"] == "alpha"]
    assert alpha["state"] == "healthy"  # still routable: a window is not an exclusion
    assert [e["layer"] for e in alpha["exclusions"]] == ["maintenance"]
    assert "alpha" not in status["models"][0]["ignore_list"]["ignore"]
    text = run(fleet, "status", "--model", fleet.model).stdout
    assert "maintenance until" in text and "planned upgrade" in text
    removed = run(fleet, "maintenance", "remove", str(window), "--reason", "done early")
    assert removed.exit_code == 0 and f"removed maintenance window {window}" in removed.stdout
    assert "no maintenance window in force" in run(fleet, "maintenance", "list").stdout
    audit = json.loads(run(fleet, "audit", "--model", fleet.model, "--json").stdout)["records"]
    assert [(r["event"], r["detail"]["reason"]) for r in audit[:2]] == [
        ("maintenance_removed", "done early"),
        ("maintenance_added", "planned upgrade"),
    ]
    again = run(fleet, "maintenance", "remove", str(window))
    assert again.exit_code == 2
    assert f"no active maintenance window with id {window}" in again.stderr


def test_a_second_window_for_the_provider_exits_4(fleet: Fleet) -> None:
    assert add(fleet, "charlie/fp8").exit_code == 0
    refused = add(fleet, "charlie/fp8")
    assert refused.exit_code == 4 and "remove that window first" in refused.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["-p", "zulu", "--reason", "r", "--until", "2099-01-01T00:00:00Z"], 2, "unknown provider"),
        (["-p", "Not A Slug", "--reason", "r", "--until", "2099-01-01"], 2, "provider slug"),
        (["-p", "alpha", "--reason", "r", "--until", "soon"], 2, "not an ISO-8601 time"),
        (
            ["-p", "alpha", "--reason", "r", "--until", "2020-01-01T00:00:00Z"],
            2,
            "not in the future",
        ),
        (["-p", "alpha", "--reason", " ", "--until", "2099-01-01"], 2, "must not be empty"),
        (["-p", "alpha", "--reason", "r"], 2, "--until"),
    ],
)
def test_add_rejects_bad_input_clearly(
    fleet: Fleet, args: list[str], code: int, message: str
) -> None:
    result = run(fleet, "maintenance", "add", "--model", fleet.model, *args)
    assert result.exit_code == code and message in result.stderr
