"""Model identity drift end to end: the simulator's `served_model` fault changes what the answers
report; a change is one drift event with an alert, and a change on every endpoint is one;
`canary probe` shows what each endpoint served and flags an unexpected id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import CliRunner
from drill_kit import LANGUAGES, MODEL, drill, fault, faults_at, provider, scenario

from canary.cli.main import app
from canary.service.logs import configure_logging
from canary.sim.server import start_simulator

TAGS = ("alpha", "bravo", "charlie")


def test_one_endpoint_serving_another_model_is_one_drift_alert_and_the_first_sighting_none() -> (
    None
):
    swap = fault("served_model", id="other/model-9")
    result = drill(
        scenario(*(provider(t) for t in TAGS), timeline=[faults_at(3, "bravo", swap)]), 4
    )
    drift = [e for e in result.of_kind("drift") if e["field"] == "served_model"]
    assert [(e["round"], e["provider"], e["old"], e["new"], e["alert"]) for e in drift] == [
        (3, "bravo", MODEL, "other/model-9", True)
    ]
    assert "bravo now serves other/model-9" in drift[0]["reason"]


@pytest.mark.slow  # the grouping is tests/core's; drilled: the one-endpoint drift test
def test_a_change_on_every_endpoint_at_once_is_one_model_level_event() -> None:
    dated = fault("served_model", id=f"{MODEL}-2026-01-01")
    timeline = [faults_at(2, t, dated) for t in TAGS]
    result = drill(scenario(*(provider(t) for t in TAGS), timeline=timeline), 3)
    drift = [e for e in result.of_kind("drift") if e["field"] == "served_model"]
    assert [(e["round"], e["provider"], e["new"]) for e in drift] == [
        (2, None, f"{MODEL}-2026-01-01")
    ]
    assert drift[0]["alert"] is True


def test_canary_drift_names_an_endpoint_serving_an_unexpected_id(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    swap = fault("served_model", id="other/model-9")
    dated = fault("served_model", id=f"{MODEL}-20260101")
    fleet = scenario(provider("alpha", dated), provider("bravo", swap), provider("charlie"))
    drill(fleet, 1, database_url=url)
    config = tmp_path / "canary.toml"
    config.write_text(f'database_url = "{url}"\n[[models]]\nid = "{MODEL}"\n')
    out = CliRunner().invoke(
        app, ["--config", str(config), "drift", "-m", MODEL, "--served", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == [
        {"provider": "alpha", "served_model": f"{MODEL}-20260101", "expected": True},
        {"provider": "bravo", "served_model": "other/model-9", "expected": False},
        {"provider": "charlie", "served_model": MODEL, "expected": True},
    ]
    table = CliRunner().invoke(app, ["--config", str(config), "drift", "-m", MODEL])
    assert "bravo: serves other/model-9  (unexpected id)" in table.stdout


@pytest.mark.slow  # the grouping is tests/core's; drilled: the one-endpoint drift test
def test_every_endpoint_moving_from_different_ids_to_one_is_one_event_listing_them(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'moved.db'}"
    new = fault("served_model", id="acme/drill-2")
    fleet = scenario(
        provider("alpha", fault("served_model", id="other/a")),
        provider("bravo", fault("served_model", id="other/b")),
        provider("charlie"),
        timeline=[faults_at(2, t, new) for t in TAGS],
    )
    result = drill(fleet, 2, database_url=url)
    drift = [e for e in result.of_kind("drift") if e["field"] == "served_model"]
    assert [(e["round"], e["provider"], e["old"], e["new"], e["alert"]) for e in drift] == [
        (2, None, [MODEL, "other/a", "other/b"], "acme/drill-2", True)
    ]
    config = tmp_path / "canary.toml"
    config.write_text(f'database_url = "{url}"\n[[models]]\nid = "{MODEL}"\n')
    rows = json.loads(
        CliRunner().invoke(app, ["--config", str(config), "drift", "-m", MODEL, "--json"]).stdout
    )
    served = [r for r in rows if r["field"] == "served_model"]
    assert [(r["provider"], r["old"], r["new"]) for r in served] == [
        (None, [MODEL, "other/a", "other/b"], "acme/drill-2")
    ]
    table = CliRunner().invoke(app, ["--config", str(config), "drift", "-m", MODEL])
    assert f"{MODEL}, other/a, other/b → acme/drill-2" in " ".join(table.stdout.split())


@pytest.fixture
def probe_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.chdir(tmp_path)  # no ./canary.toml; a default SQLite file would land here
    for name in ("CANARY_CONFIG", "CANARY_MODELS", "CANARY_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    fleet = scenario(
        provider("alpha", fault("served_model", id=f"{MODEL}-20260101")),
        provider("bravo", fault("served_model", id="other/model-9")),
        provider("charlie"),
    )
    with start_simulator(fleet, detector=False) as sim:
        yield {
            "CANARY_OPENROUTER_BASE_URL": sim.base_url,
            "OPENROUTER_API_KEY": "sk-or-probe-key",
            "CANARY_LANGUAGES": ",".join(LANGUAGES),
            "CANARY_LOG_FORMAT": "json",
        }
    configure_logging()  # the command pointed structlog at the runner's stream, now closed


def test_canary_probe_json_gives_each_endpoints_served_model_and_whether_expected(
    probe_env: dict[str, str],
) -> None:
    out = CliRunner().invoke(app, ["probe", "--model", MODEL, "--json"], env=probe_env)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert {p["provider"]: p["served_model"] for p in doc["providers"]} == {
        "alpha": {"id": f"{MODEL}-20260101", "expected": True},
        "bravo": {"id": "other/model-9", "expected": False},
        "charlie": {"id": MODEL, "expected": True},
    }


def test_canary_probe_table_flags_only_the_unexpected_id(probe_env: dict[str, str]) -> None:
    out = CliRunner().invoke(app, ["probe", "--model", MODEL], env=probe_env)
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert text.count("(unexpected id)") == 1
    assert "serves other/model-9 (unexpected id)" in text
    assert f"serves {MODEL}" not in text  # expected ids are not called out
