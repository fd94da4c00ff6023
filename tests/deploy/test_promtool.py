"""Prometheus's own checks, where promtool is installed (CI installs it): the rules are valid, their
unit tests (deploy/prometheus/alerts_test.yaml) pass, and a real scrape passes its linter."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from metrics_fleet import fleet_client, fleet_models, seed_fleet

from canary.store.repository import Store

PROMTOOL = shutil.which("promtool")
pytestmark = [
    pytest.mark.slow,  # runs promtool
    pytest.mark.skipif(
        PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)"
    ),
]

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], input=stdin, capture_output=True, text=True, cwd=PROMETHEUS
    )


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", "alerts.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_runs_the_rules_unit_tests() -> None:
    result = promtool("test", "rules", "alerts_test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_lints_a_scrape_of_the_real_app(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'canary.db'}")
    store.upgrade()
    models = fleet_models(3)
    seed_fleet(store, models, 4, NOW)
    scrape = fleet_client(store, models, NOW, daily_budget_usd=5.0).get("/metrics").text
    store.dispose()
    result = promtool("check", "metrics", stdin=scrape)
    assert result.returncode == 0, result.stdout + result.stderr
