"""``canary report add`` and ``canary report list`` against a real store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cli_fleet import Fleet
from pydantic import JsonValue
from typer.testing import CliRunner

from canary.cli.main import app
from canary.store.rows import NewDocument

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


def test_ignore_list_at_shows_what_was_published_then(fleet: Fleet) -> None:
    doc: JsonValue = {"model": fleet.model, "ignore": ["bravo"], "policy_version": "p-1", "needs": [],
           "entries": [{"provider": "bravo", "layer": "quarantine", "reason": "hygiene failed",
                        "since": None, "until": None}]}  # fmt: skip
    at = datetime(2026, 5, 1, 14, 0, tzinfo=UTC)
    fleet.store.record_documents([NewDocument(fleet.model, "", 'W/"1"', doc)], at)
    shown = run(fleet, "ignore-list", "-m", fleet.model, "--at", "2026-05-01T14:10:00Z")
    assert shown.exit_code == 0, shown.output
    assert "published at 2026-05-01T14:00:00Z" in shown.stdout and "hygiene failed" in shown.stdout
    body = json.loads(
        run(fleet, "ignore-list", "-m", fleet.model, "--at", "2026-05-01T14:10Z", "--json").stdout
    )
    assert body["document"]["ignore"] == ["bravo"] and body["etag"] == 'W/"1"'
    before = run(fleet, "ignore-list", "-m", fleet.model, "--at", "2026-05-01T13:00:00Z")
    assert before.exit_code != 0 and "nothing was recorded" in before.output


def test_ignore_list_at_with_a_profile_shows_that_profile_s_list_then(fleet: Fleet) -> None:
    at = datetime(2026, 5, 1, 14, 0, tzinfo=UTC)
    plain: dict[str, JsonValue] = {"model": fleet.model, "ignore": [], "policy_version": "p-1", "needs": [],
             "entries": []}  # fmt: skip
    json_list: JsonValue = {**plain, "ignore": ["charlie/fp8"], "needs": ["structured_outputs"],
                 "profile": {"name": "json", "settings_hash": "h"}, "withheld": [],
                 "entries": [{"provider": "charlie/fp8", "layer": "requirement",
                              "reason": "needs: structured_outputs not advertised",
                              "since": None, "until": None}]}  # fmt: skip
    fleet.store.record_documents([NewDocument(fleet.model, "", 'W/"p"', plain)], at)
    fleet.store.record_documents([NewDocument(fleet.model, "profile=json", 'W/"j"', json_list)], at)
    args = ("ignore-list", "-m", fleet.model, "--at", "2026-05-01T14:10:00Z")
    shown = run(fleet, *args, "--profile", "json")
    assert shown.exit_code == 0, shown.output
    assert "for profile json" in shown.stdout and "not advertised" in shown.stdout
    body = json.loads(run(fleet, *args, "--profile", "json", "--json").stdout)
    assert body["etag"] == 'W/"j"' and body["document"]["ignore"] == ["charlie/fp8"]
    assert json.loads(run(fleet, *args, "--json").stdout)["etag"] == 'W/"p"'
    other = run(fleet, *args, "--profile", "json", "--needs", "tools")
    assert other.exit_code != 0 and "(profile json)" in other.output
