"""``canary status``: latency beside the routing state, probe cost, and the cheap read path."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_fleet import REPO, Fleet
from cli_runner import CliRunner

from canary.cli.main import app
from canary.config.definitions import load_builtin_exclusions
from canary.config.probe_set import load_probes
from canary.store.repository import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from ops_seed import ADVERTISED, POLICY, ROUND_COSTS  # noqa: E402

runner = CliRunner()


def status(fleet: Fleet, *args: str) -> Any:
    result = runner.invoke(
        app, ["--config", str(fleet.config), "status", *args], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def test_status_json_keeps_latency_apart_from_the_routing_state(fleet: Fleet) -> None:
    [model] = status(fleet, "--model", fleet.model, "--json")["models"]
    providers = {p["provider"]: p for p in model["providers"]}
    assert providers["foxtrot"]["state"] == "healthy"
    assert providers["foxtrot"]["latency"]["state"] == "degraded"
    assert providers["foxtrot"]["latency"]["openrouter_last_30m_ms"] == ADVERTISED
    assert providers["foxtrot"]["latency"]["peers_p95_24h_s"] == pytest.approx(1.02)
    assert providers["alpha"]["latency"]["state"] == "healthy"


def test_status_json_shows_the_cost_per_round_model_and_day(fleet: Fleet) -> None:
    body = status(fleet, "--model", fleet.model, "--json")
    cost = body["models"][0]["cost"]
    assert cost["last_round"]["id"] == fleet.seeded.rounds[1]
    assert cost["last_round"]["cost_usd"] == pytest.approx(ROUND_COSTS[1])
    assert cost["last_24h_usd"] == pytest.approx(sum(ROUND_COSTS))
    # The rounds ran 60 and 30 minutes ago: today holds both unless midnight fell in between.
    assert cost["today_usd"] <= sum(ROUND_COSTS) + 1e-9
    assert body["cost"]["today_usd"] >= cost["today_usd"]
    assert body["cost"]["daily_budget_usd"] is None


def test_status_shows_the_budget_left_when_one_is_set(fleet: Fleet) -> None:
    text = fleet.config.read_text(encoding="utf-8")
    fleet.config.write_text("daily_budget_usd = 5.0\n" + text, encoding="utf-8")
    day = status(fleet, "--json")["cost"]
    assert day["daily_budget_usd"] == 5.0
    assert day["budget_left_usd"] == pytest.approx(5.0 - day["today_usd"])
    assert "of the daily budget $5.0000" in status(fleet)


def test_status_table_shows_latency_cost_and_skipped_endpoints(fleet: Fleet) -> None:
    now = datetime.now(UTC)
    rid = fleet.store.claim_round(fleet.model, now, "test", POLICY, {}, started_at=now)
    assert rid is not None
    skipped = [{"provider": "foxtrot", "reason": "budget"}]
    fleet.store.finish_round(rid, "finished", cost_usd=0.001, skipped=skipped, at=now)
    text = status(fleet, "--model", fleet.model)
    assert "degraded" in text and "OR p50 0.64" in text  # seconds, as every time in the table
    assert "probe cost: last round $0.0010" in text
    assert "skipped last round: foxtrot (budget)" in text
    assert "probes today (UTC, all models)" in text and "no daily budget set" in text


def test_status_takes_the_policy_version_the_daemon_recorded(fleet: Fleet) -> None:
    [model] = status(fleet, "--model", fleet.model, "--json")["models"]
    assert model["ignore_list"]["policy_version"] == POLICY
    assert model["ignore_list"]["ignore"] == ["bravo", "delta", "echo"]


BUILTIN = """# reviewed
entries:
  - model: acme/a
    provider: slowhost/fp8
    reason: "measured: stray tokens"
    since: 2026-01-10
    until: 2026-09-01
    evidence: "canary probe --model acme/a --provider slowhost"
    rounds: [3, 4]
  - model: acme/b
    provider: other
    reason: r
    since: 2026-02-01
    evidence: e
"""


def test_the_quick_builtin_reader_matches_the_full_probe_load(tmp_path: Path) -> None:
    probes = tmp_path / "probes"
    shutil.copytree(REPO / "probes", probes)
    (probes / "builtin_exclusions.yaml").write_text(BUILTIN, encoding="utf-8")
    quick = load_builtin_exclusions(probes)
    assert len(quick) == 2
    assert quick == load_probes(probes, ("en",)).builtin_exclusions


def test_an_unexpected_builtin_file_stops_status_with_the_loader_error(
    fleet: Fleet,
) -> None:
    probes = Path(fleet.config.read_text().split('probes_dir = "')[1].split('"')[0])
    (probes / "builtin_exclusions.yaml").write_text(
        BUILTIN.replace("rounds: [3, 4]", "colour: red"), encoding="utf-8"
    )
    result = runner.invoke(app, ["--config", str(fleet.config), "status"])
    assert result.exit_code == 2 and "probe definitions" in result.stderr
    assert "colour" in result.stderr


@pytest.mark.slow
def test_status_loads_no_probe_definitions_nor_jsonschema(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'canary.db'}")
    store.upgrade()
    fleet = Fleet(store, tmp_path, "acme/quick")
    program = (
        "import io, sys, json\nfrom contextlib import redirect_stdout\n"
        "from canary.cli.main import app\nout = io.StringIO()\nwith redirect_stdout(out):\n"
        f"    app(['--config', {str(fleet.config)!r}, 'status', '--json'], standalone_mode=False)\n"
        "json.loads(out.getvalue())\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'"
        " or m == 'canary.config.probe_set')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=90, check=False
    )
    store.dispose()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def entry_point(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `canary` command as it runs: canary.cli.main.main in a new process."""
    program = (
        "import sys\nfrom canary.cli.main import main\n"
        f"sys.argv = ['canary', '--config', {str(config)!r}, *{list(args)!r}]\nmain()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # piped: buffered
    return subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=env,
    )


@pytest.mark.slow
def test_the_command_exits_early_with_its_whole_output_and_exit_code(fleet: Fleet) -> None:
    done = entry_point(fleet.config, "status", "--model", fleet.model, "--json")
    assert done.returncode == 0, done.stderr
    [model] = json.loads(done.stdout)["models"]  # every byte flushed before the early exit
    assert model["model"] == fleet.model and len(model["providers"]) == 6
    refused = entry_point(fleet.config, "status", "--model", "nobody/none")
    assert refused.returncode == 2 and "nobody/none" in refused.stderr
    assert refused.stdout == ""


ENTRY_LISTING = ("alpha", "bravo", "delta/turbo")


def test_a_provider_slug_excluded_is_an_entry_not_a_provider_row(
    store: Store, tmp_path: Path
) -> None:
    fleet = Fleet(store, tmp_path, "acme/cli-entries", listing=ENTRY_LISTING)
    now = datetime.now(UTC)
    store.add_exclusion(
        fleet.model, "delta", "incident 7: timeouts", "test", None, now, builtin=(), floor=0
    )
    [model] = status(fleet, "--model", fleet.model, "--json")["models"]
    providers = {p["provider"]: p for p in model["providers"]}
    assert sorted(providers) == sorted(ENTRY_LISTING)
    assert providers["delta/turbo"]["state"] == "excluded"
    assert providers["delta/turbo"]["exclusions"][0]["provider"] == "delta"
    assert [e["provider"] for e in model["ignore_list"]["entries"]] == ["delta", "echo"]
    table = status(fleet, "--model", fleet.model)
    lines = table.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"Provider +State", line))
    listed = lines[
        header + 1 : next(i for i, line in enumerate(lines) if line.startswith("ignore"))
    ]
    # the endpoints' columns stand two spaces or more apart; no cell holds two spaces
    providers_rows = {c[0]: c for c in (re.split(r" {2,}", line) for line in listed)}
    assert sorted(providers_rows) == sorted(ENTRY_LISTING)  # no "delta ... none yet" row
    turbo = providers_rows["delta/turbo"]
    assert turbo[1] == "excluded" and turbo[6] == "runtime delta: incident 7: timeouts"
    assert "entries of the published list" in table
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines]
    rows = [c for c in cells if c]
    entries = {c[0]: c for c in rows if len(c) == 5}
    assert entries["delta"][1:4] == ["runtime", "delta/turbo", "incident 7: timeouts"]
    assert entries["echo"][1:3] == ["builtin", "no endpoint known"]
