"""One view, one shape: where an API route shows what a read command shows, the command's
``--json`` prints the route's body (SQLite and PostgreSQL; the times a body is stamped with, its
``at`` and the list's ``generated_at``, aside)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cli_fleet import Fleet
from cli_runner import CliRunner
from ops_seed import seed
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.cli.main import app
from canary.config.settings import load_settings
from canary.rounds.wiring import build_wiring
from canary.service.ignore_list import IgnoreListService

runner = CliRunner()
STAMPS = ("at", "generated_at")


def cli(fleet: Fleet, *args: str) -> Any:
    result = runner.invoke(
        app, ["--config", str(fleet.config), *args, "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def unstamped(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in STAMPS}


@pytest.fixture
def api(fleet: Fleet) -> TestClient:
    return serve(fleet)


def serve(fleet: Fleet) -> TestClient:
    """canary serve's app over the fleet's store and settings."""
    settings = load_settings(fleet.config)
    wiring = build_wiring(settings, store=fleet.store, upgrade=False)
    service = IgnoreListService(
        fleet.store,
        wiring.probes.builtin_exclusions,
        settings.model_ids,
        wiring.policy_version,
        floor_of=lambda m: settings.model(m).capacity_floor,
    )
    assert service.refresh()
    return TestClient(create_app(settings, fleet.store, service))


def route(api: TestClient, path: str, **params: str) -> Any:
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def released_and_excluded(fleet: Fleet) -> None:
    """An ended quarantine, a runtime exclusion with an end, and their audit rows."""
    now = datetime.now(UTC)
    fleet.store.release_quarantine(fleet.model, "bravo", "cli:test", "fixed upstream", now)
    fleet.store.add_exclusion(
        fleet.model, "alpha", "incident 4", "cli:test", now + timedelta(days=1), now,
        builtin=(), floor=0,
    )  # fmt: skip


def test_quarantine_list_prints_the_quarantines_route_body(fleet: Fleet, api: TestClient) -> None:
    body = cli(fleet, "quarantine", "list", "-m", fleet.model)
    assert unstamped(body) == unstamped(route(api, "/v1/quarantines", model=fleet.model))
    [bravo] = body["quarantines"]
    assert {"id", "causes", "withheld", "evidence"} <= set(bravo)
    everything = cli(fleet, "quarantine", "list")
    assert unstamped(everything) == unstamped(route(api, "/v1/quarantines"))
    released_and_excluded(fleet)
    ended = cli(fleet, "quarantine", "list", "-m", fleet.model, "--all")
    assert unstamped(ended) == unstamped(
        route(api, "/v1/quarantines", model=fleet.model, all="true")
    )
    assert ended["quarantines"][0]["release_why"] == "manual"
    assert cli(fleet, "quarantine", "list", "-m", fleet.model)["quarantines"] == []


def test_exclude_list_prints_the_exclusions_route_body(fleet: Fleet, api: TestClient) -> None:
    released_and_excluded(fleet)
    body = cli(fleet, "exclude", "list", "-m", fleet.model)
    assert unstamped(body) == unstamped(route(api, "/v1/exclusions", model=fleet.model))
    assert [(e["provider"], e["layer"]) for e in body["exclusions"]] == [
        ("alpha", "runtime"), ("delta", "runtime"), ("echo", "builtin"),
    ]  # fmt: skip
    assert unstamped(cli(fleet, "exclude", "list")) == unstamped(route(api, "/v1/exclusions"))


def test_audit_prints_the_audit_route_body(fleet: Fleet, api: TestClient) -> None:
    released_and_excluded(fleet)
    body = cli(fleet, "audit", "-m", fleet.model)
    assert body == route(api, "/v1/audit", model=fleet.model)
    assert [r["event"] for r in body["records"]][:2] == ["exclusion_added", "release"]
    since = (datetime.now(UTC) - timedelta(minutes=20)).isoformat()
    assert cli(fleet, "audit", "-m", fleet.model, "--since", since, "--limit", "2") == route(
        api, "/v1/audit", model=fleet.model, since=since, limit="2"
    )


def test_history_prints_the_history_route_body(fleet: Fleet, api: TestClient) -> None:
    body = cli(fleet, "history", "-m", fleet.model, "-p", "charlie/fp8", "--limit", "5")
    assert body == route(api, "/v1/history", model=fleet.model, provider="charlie/fp8", limit="5")
    assert [r["verdict"] for r in body["history"]] == ["fail", "pass"]


def test_ignore_list_prints_the_ignore_list_route_body(fleet: Fleet, api: TestClient) -> None:
    for needs in ((), ("--needs", "tools")):
        body = cli(fleet, "ignore-list", "-m", fleet.model, *needs)
        params = {"needs": "tools"} if needs else {}
        assert unstamped(body) == unstamped(
            route(api, "/v1/ignore-list", model=fleet.model, **params)
        )


def test_ignore_list_of_several_models_prints_the_routes_body_for_them(fleet: Fleet) -> None:
    second = fleet.model + "-b"
    seed(fleet.store, second, now=datetime.now(UTC))
    with fleet.config.open("a", encoding="utf-8") as config:
        config.write(f'[[models]]\nid = "{second}"\n')
    api = serve(fleet)
    for needs in ((), ("--needs", "tools")):
        body = cli(fleet, "ignore-list", "-m", second, "-m", fleet.model, *needs)
        query = f"model={second}&model={fleet.model}" + ("&needs=tools" if needs else "")
        response = api.get("/v1/ignore-list?" + query)
        assert response.status_code == 200, response.text
        assert [unstamped(d) for d in body["lists"]] == [
            unstamped(d) for d in response.json()["lists"]
        ]
    assert [d["model"] for d in body["lists"]] == [second, fleet.model]
    table = runner.invoke(
        app, ["--config", str(fleet.config), "ignore-list", "-m", fleet.model, "-m", second]
    )
    assert table.exit_code == 0, table.output
    assert f"ignore list of {fleet.model}" in table.output
    assert f"ignore list of {second}" in table.output
    unknown = runner.invoke(
        app, ["--config", str(fleet.config), "ignore-list", "-m", fleet.model, "-m", "acme/nope"]
    )
    assert unknown.exit_code != 0 and fleet.model in unknown.output


def test_each_model_of_status_is_the_providers_route_body_and_its_list(
    fleet: Fleet, api: TestClient
) -> None:
    [model] = cli(fleet, "status", "-m", fleet.model)["models"]
    listed = model.pop("ignore_list")
    assert unstamped(model) == unstamped(route(api, "/v1/providers", model=fleet.model))
    # status takes the policy version the latest round recorded (the seed's), the test's app
    # computes its own from the settings: the rest of the list is the same document
    document = route(api, "/v1/ignore-list", model=fleet.model)
    assert {**unstamped(listed), "policy_version": None} == {
        **unstamped(document),
        "policy_version": None,
    }
