"""The operator commands through typer's runner, against a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import getpass
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cli_fleet import Fleet
from cli_runner import CliRunner
from ops_seed import relist

from canary.cli.main import app
from canary.core.model import looks_json

runner = CliRunner()


def run(fleet: Fleet, *args: str) -> Any:
    return runner.invoke(app, ["--config", str(fleet.config), *args], catch_exceptions=False)


def run_json(fleet: Fleet, *args: str) -> Any:
    result = run(fleet, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_status_json_shows_every_provider_state_and_the_list(fleet: Fleet) -> None:
    status = run_json(fleet, "status")
    [model] = status["models"]
    states = {p["provider"]: p["state"] for p in model["providers"]}
    assert states == {
        "alpha": "healthy", "bravo": "quarantined", "charlie/fp8": "suspect",
        "delta": "excluded", "echo": "excluded", "foxtrot": "healthy",
    }  # fmt: skip
    assert model["ignore_list"]["ignore"] == ["bravo", "delta", "echo"]
    bravo = next(p for p in model["providers"] if p["provider"] == "bravo")
    assert bravo["failing_rounds"] == 2 and bravo["last_round"]["hygiene"]["result"] == "fail"


def test_status_table_names_providers_and_states(fleet: Fleet) -> None:
    result = run(fleet, "status", "--model", fleet.model)
    assert result.exit_code == 0, result.output
    for word in (
        "alpha",
        "bravo",
        "charlie/fp8",
        "quarantined",
        "suspect",
        "degraded",
        "ignore list",
        "probe cost",
    ):
        assert word in result.stdout


def test_status_of_an_unknown_model_names_the_known_ones(fleet: Fleet) -> None:
    result = run(fleet, "status", "--model", "nobody/none")
    assert result.exit_code == 2
    assert "unknown model 'nobody/none'" in result.stderr and fleet.model in result.stderr


def test_quarantine_list_json_has_the_documented_fields(fleet: Fleet) -> None:
    body = run_json(fleet, "quarantine", "list")
    assert set(body) == {"model", "at", "quarantines"} and body["model"] is None
    rows = [r for r in body["quarantines"] if r["model"] == fleet.model]
    assert len(rows) == 1
    assert set(rows[0]) == {
        "id", "model", "provider", "since", "until", "step", "reason", "causes", "withheld",
        "released_at", "release_why", "evidence",
    }  # fmt: skip
    assert rows[0]["causes"] == ["hygiene"] and rows[0]["withheld"] is False
    assert rows[0]["evidence"] == looks_json(fleet.seeded.looks)  # the looks it rests on
    assert rows[0]["provider"] == "bravo" and rows[0]["step"] == 1
    assert "hygiene failed" in rows[0]["reason"] and rows[0]["until"].endswith("Z")


def test_quarantine_list_table(fleet: Fleet) -> None:
    result = run(fleet, "quarantine", "list", "--model", fleet.model)
    assert result.exit_code == 0 and "bravo" in result.stdout


def test_quarantine_show_gives_state_evidence_and_history(fleet: Fleet) -> None:
    shown = run_json(fleet, "quarantine", "show", "--model", fleet.model, "--provider", "bravo")
    assert shown["quarantined"] is True
    assert [look["id"] for look in shown["active"]["evidence"]] == list(fleet.seeded.rounds)
    assert shown["active"]["evidence"] == looks_json(fleet.seeded.looks)
    assert shown["state"]["failing_streak"] == 2 and len(shown["history"]) == 1
    table = run(fleet, "quarantine", "show", "--model", fleet.model, "--provider", "bravo")
    assert (
        table.exit_code == 0
        and "quarantined" in table.stdout
        and f"evidence: round {fleet.seeded.rounds[0]} started" in table.stdout
    )


def test_quarantine_show_of_an_unknown_provider_names_the_known_ones(fleet: Fleet) -> None:
    result = run(fleet, "quarantine", "show", "--model", fleet.model, "--provider", "zulu")
    assert result.exit_code == 2
    assert (
        "unknown provider 'zulu'" in result.stderr
        and "alpha" in result.stderr
        and "foxtrot" in result.stderr
    )


def test_quarantine_release_is_audited_with_the_cli_actor_and_reason(fleet: Fleet) -> None:
    result = run(
        fleet,
        "quarantine",
        "release",
        "--model",
        fleet.model,
        "--provider",
        "bravo",
        "--reason",
        "fixed upstream",
    )
    assert result.exit_code == 0, result.output
    body = run_json(fleet, "quarantine", "list")
    assert [r for r in body["quarantines"] if r["model"] == fleet.model] == []
    record = run_json(fleet, "audit", "--model", fleet.model)["records"][0]
    assert (record["event"], record["actor"], record["provider"]) == (
        "release",
        f"cli:{getpass.getuser()}",
        "bravo",
    )
    assert record["detail"]["reason"] == "fixed upstream" and record["detail"]["why"] == "manual"
    again = run(
        fleet,
        "quarantine",
        "release",
        "--model",
        fleet.model,
        "--provider",
        "bravo",
        "--reason",
        "x",
    )
    assert again.exit_code == 2 and "no active quarantine" in again.stderr


def test_quarantine_release_needs_a_reason(fleet: Fleet) -> None:
    missing = run(fleet, "quarantine", "release", "--model", fleet.model, "--provider", "bravo")
    assert missing.exit_code == 2 and "--reason" in missing.output
    blank = run(
        fleet,
        "quarantine",
        "release",
        "--model",
        fleet.model,
        "--provider",
        "bravo",
        "--reason",
        " ",
    )
    assert blank.exit_code == 2 and "must not be empty" in blank.stderr


def test_exclude_add_list_remove_round_trip_with_audit(fleet: Fleet) -> None:
    until = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    added = run(
        fleet,
        "exclude",
        "add",
        "--model",
        fleet.model,
        "--provider",
        "alpha",
        "--reason",
        "incident 9",
        "--until",
        until,
    )
    assert added.exit_code == 0, added.output
    new_id = int(added.stdout.split("(id ")[1].split(")")[0])
    listed = run_json(fleet, "exclude", "list", "--model", fleet.model)["exclusions"]
    runtime = {(e["provider"], e["layer"]) for e in listed}
    assert {("alpha", "runtime"), ("delta", "runtime"), ("echo", "builtin")} == runtime
    alpha = next(e for e in listed if e["provider"] == "alpha")
    assert alpha["id"] == new_id and alpha["until"] == until and alpha["reason"] == "incident 9"
    assert "alpha" in run_json(fleet, "ignore-list", "--model", fleet.model)["ignore"]
    removed = run(fleet, "exclude", "remove", str(new_id), "--reason", "incident over")
    assert removed.exit_code == 0 and f"removed exclusion {new_id}" in removed.stdout
    assert "alpha" not in run_json(fleet, "ignore-list", "--model", fleet.model)["ignore"]
    events = [
        (r["event"], r["detail"].get("reason"))
        for r in run_json(fleet, "audit", "--model", fleet.model)["records"][:2]
    ]
    assert events == [("exclusion_removed", "incident over"), ("exclusion_added", "incident 9")]
    again = run(fleet, "exclude", "remove", str(new_id))
    assert again.exit_code == 2 and f"no active runtime exclusion with id {new_id}" in again.stderr


LISTED = ("alpha", "deepinfra/fp8", "deepinfra/turbo")  # deepinfra names two of them


def exclude_deepinfra(fleet: Fleet, *extra: str) -> Any:
    args = ["--model", fleet.model, "--provider", "deepinfra", "--reason", "incident 12"]
    return run(fleet, "exclude", "add", *args, *extra)


def test_exclude_add_of_a_provider_slug_counts_every_endpoint_it_names(fleet: Fleet) -> None:
    relist(fleet.store, fleet.model, LISTED + ("foxtrot",), datetime.now(UTC))
    added = exclude_deepinfra(fleet)
    assert added.exit_code == 0, added.output
    assert "2 usable endpoint(s)" in added.stdout and "floor 2" in added.stdout
    assert "deepinfra" in run_json(fleet, "ignore-list", "--model", fleet.model)["ignore"]


def test_exclude_add_of_a_provider_slug_below_the_floor_exits_4_unless_forced(
    fleet: Fleet,
) -> None:
    relist(fleet.store, fleet.model, LISTED, datetime.now(UTC))
    refused = exclude_deepinfra(fleet)
    assert refused.exit_code == 4
    message = " ".join(refused.stderr.split())
    assert "excluding deepinfra leaves 1 usable endpoint(s)" in message
    assert "floor of 2" in message and "--force" in message
    assert "deepinfra" not in run_json(fleet, "ignore-list", "--model", fleet.model)["ignore"]
    forced = exclude_deepinfra(fleet, "--force")
    assert forced.exit_code == 0, forced.output
    document = run_json(fleet, "ignore-list", "--model", fleet.model)
    assert "deepinfra" in document["ignore"]
    assert document["floor_breached"] is True and document["usable_endpoints"] == 1
    [breach] = fleet.store.audit(fleet.model, events=["floor_breached"])
    assert breach.actor.startswith("cli:") and breach.detail["action"]["tag"] == "deepinfra"


def test_exclude_list_table(fleet: Fleet) -> None:
    result = run(fleet, "exclude", "list", "--model", fleet.model)
    assert result.exit_code == 0 and "delta" in result.stdout and "builtin" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "zulu", "--reason", "r"], "unknown provider 'zulu'"),
        (["--provider", "alpha", "--reason", "r", "--until", "soon"], "not an ISO-8601 time"),
        (
            ["--provider", "alpha", "--reason", "r", "--until", "2020-01-01T00:00:00Z"],
            "not in the future",
        ),
        (["--provider", "alpha", "--reason", ""], "must not be empty"),
    ],
)
def test_exclude_add_rejects_bad_input_clearly(fleet: Fleet, args: list[str], message: str) -> None:
    result = run(fleet, "exclude", "add", "--model", fleet.model, *args)
    assert result.exit_code == 2 and message in result.stderr


def test_exclude_add_for_an_unknown_model_names_the_known_ones(fleet: Fleet) -> None:
    result = run(fleet, "exclude", "add", "--model", "x/y", "--provider", "alpha", "--reason", "r")
    assert result.exit_code == 2 and fleet.model in result.stderr


def test_ignore_list_is_the_same_document_as_the_api(fleet: Fleet) -> None:
    from starlette.testclient import TestClient

    from canary.api.app import create_app
    from canary.config.settings import load_settings
    from canary.rounds.wiring import build_wiring
    from canary.service.ignore_list import IgnoreListService

    cli_doc = run_json(fleet, "ignore-list", "--model", fleet.model)
    settings = load_settings(fleet.config)
    wiring = build_wiring(settings, store=fleet.store, upgrade=False)
    service = IgnoreListService(
        fleet.store, wiring.probes.builtin_exclusions, settings.model_ids, wiring.policy_version
    )
    service.refresh()
    api_doc = (
        TestClient(create_app(settings, fleet.store, service))
        .get("/v1/ignore-list", params={"model": fleet.model})
        .json()
    )
    assert {**cli_doc, "generated_at": None} == {**api_doc, "generated_at": None}
    assert cli_doc["ignore"] == ["bravo", "delta", "echo"]


def test_ignore_list_table(fleet: Fleet) -> None:
    result = run(fleet, "ignore-list", "--model", fleet.model)
    assert result.exit_code == 0 and "quarantine" in result.stdout and '"ignore"' in result.stdout
    assert "needs" not in result.stdout  # the full list


def test_ignore_list_table_says_which_needs_it_was_cut_for(fleet: Fleet) -> None:
    result = run(
        fleet, "ignore-list", "--model", fleet.model, "--needs", "tools,structured_outputs"
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "needs: structured_outputs, tools" in lines
    assert "for needs structured_outputs, tools" in " ".join(result.stdout.split())
    as_json = run_json(fleet, "ignore-list", "--model", fleet.model, "--needs", "tools")
    assert as_json["needs"] == ["tools"]
    one = run(fleet, "ignore-list", "--model", fleet.model, "--needs", "tools")
    assert "needs: tools" in one.stdout.splitlines()


def test_history_lists_verdicts_and_results_newest_first(fleet: Fleet) -> None:
    body = run_json(fleet, "history", "--model", fleet.model, "--provider", "charlie/fp8")
    assert (body["model"], body["provider"]) == (fleet.model, "charlie/fp8")
    rows = body["history"]
    assert [r["round_id"] for r in rows] == sorted(fleet.seeded.rounds, reverse=True)
    assert [r["verdict"] for r in rows] == ["fail", "pass"]
    assert {c["contract"]: c["result"] for c in rows[0]["results"]} == {
        "ttft": "pass",
        "hygiene": "fail",
    }
    table = run(fleet, "history", "--model", fleet.model, "--provider", "charlie/fp8")
    assert table.exit_code == 0 and "fail" in table.stdout


def test_history_marks_extra_rounds_and_rounds_that_did_not_finish(fleet: Fleet) -> None:
    from canary.core.model import RoundVerdict, Verdict

    store, model = fleet.store, fleet.model
    now = datetime.now(UTC)
    marked = {}
    for kind, minutes in (("extra", 20), ("abandoned", 10)):
        rid = store.claim_round(
            model, now - timedelta(minutes=minutes), "me:1", "p", {}, extra=kind == "extra"
        )
        assert rid is not None
        store.record_verdicts(
            rid, model, {"alpha": RoundVerdict(model, "alpha", Verdict.passed, ())}
        )
        if kind == "extra":
            store.finish_round(rid, "finished", detail={"extra": True})
        else:
            store.finish_round(rid, "abandoned")
        marked[kind] = rid
    rows = run_json(fleet, "history", "-m", model, "-p", "alpha")["history"]
    assert [(r["round_id"], r["round_status"], r["extra"]) for r in rows] == [
        (marked["abandoned"], "abandoned", False),
        (marked["extra"], "finished", True),
        *((rid, "finished", False) for rid in sorted(fleet.seeded.rounds, reverse=True)),
    ]
    table = run(fleet, "history", "-m", model, "-p", "alpha").stdout
    lines = table.splitlines()
    assert "Status" in next(line for line in lines if "Round" in line and "Verdict" in line)
    for rid, status in (
        (marked["extra"], "extra, finished"),
        (marked["abandoned"], "abandoned"),
        (fleet.seeded.rounds[0], "finished"),
    ):
        line = next(x for x in lines if re.match(rf"\W*{rid}\b", x))
        assert status in line, line
    assert "extra: a round run with `canary round --now`" in table
    assert "abandoned: a round that ended before its decision" in table


def test_history_of_scheduled_finished_rounds_needs_no_notes(fleet: Fleet) -> None:
    table = run(fleet, "history", "-m", fleet.model, "-p", "alpha").stdout
    assert "finished" in table and "extra" not in table and "abandoned" not in table


def test_history_of_an_unknown_provider_names_the_known_ones(fleet: Fleet) -> None:
    result = run(fleet, "history", "--model", fleet.model, "--provider", "nope")
    assert result.exit_code == 2 and "alpha" in result.stderr


def test_audit_json_records_have_the_documented_fields_and_since_filters(fleet: Fleet) -> None:
    records = run_json(fleet, "audit", "--model", fleet.model)["records"]
    assert [r["event"] for r in records] == ["exclusion_added", "quarantine"]
    assert {"at", "event", "actor", "model", "provider", "detail"} <= set(records[0])
    since = (datetime.now(UTC) - timedelta(minutes=20)).isoformat()
    assert [
        r["event"]
        for r in run_json(fleet, "audit", "--model", fleet.model, "--since", since)["records"]
    ] == ["exclusion_added"]
    table = run(fleet, "audit", "--model", fleet.model)
    assert table.exit_code == 0 and "quarantine" in table.stdout


def test_audit_rejects_a_bad_since(fleet: Fleet) -> None:
    result = run(fleet, "audit", "--since", "last week")
    assert result.exit_code == 2 and "not an ISO-8601 time" in result.stderr
