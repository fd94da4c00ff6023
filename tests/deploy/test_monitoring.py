"""deploy/prometheus/alerts.yaml and deploy/grafana/canary.json: well-formed, and every metric
their expressions name is one that ``GET /metrics`` of the real app exports over a seeded store.

No promtool needed: a small PromQL scan finds the metric names (strings, label matchers, ranges,
grouping clauses and Grafana variables taken out; what is left that is not a function, a keyword
or a number is a metric).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from metrics_fleet import fleet_client, fleet_models, seed_fleet

from canary.store.repository import Store

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "deploy" / "prometheus" / "alerts.yaml"
DASHBOARD = REPO / "deploy" / "grafana" / "canary.json"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or"}
    | {"unless", "offset", "inf", "nan"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    s = _STRING.sub('""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries (with $__rate_interval)
    s = _GROUPING.sub(" ", s)
    s = re.sub(r"\$\{?\w+\}?", " ", s)  # Grafana variables
    names = set()
    for match in _IDENT.finditer(s):
        word = match.group(0)
        if s[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('max by (model) (canary_a{model=~"$model"}) == 1', {"canary_a"}),
        (
            "(time() - max by (model) (canary_b)) > 3 * scalar(max(canary_c))",
            {"canary_b", "canary_c"},
        ),
        ("sum by (x) (rate(canary_d_total[$__rate_interval])) offset 5m", {"canary_d_total"}),
        (
            'canary_e{le="0.5", state!~"a|b"} / on(model) group_left(provider) canary_f',
            {"canary_e", "canary_f"},
        ),
        (
            "quantile by (m) (0.5, canary_g) or absent(canary_h) unless up",
            {"canary_g", "canary_h", "up"},
        ),
        ("1e3 * histogram_quantile(0.9, canary_i_bucket)", {"canary_i_bucket"}),
    ],
)
def test_the_promql_scan_finds_every_metric_and_nothing_else(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    data = json.loads(DASHBOARD.read_text())
    assert isinstance(data, dict)
    return data


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs(board: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in panels(board) for t in p.get("targets", [])]


def template_metrics(board: dict[str, Any]) -> set[str]:
    out = set()
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["query"]["query"])
            assert found, variable
            out.add(found.group(1))
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every sample name one scrape of the real app exports, over a seeded store with a budget."""
    path = tmp_path_factory.mktemp("monitoring") / "canary.db"
    store = Store(f"sqlite:///{path}")
    store.upgrade()
    models = fleet_models(2, prefix="mon")
    seed_fleet(store, models, 3, NOW)
    text = fleet_client(store, models, NOW, daily_budget_usd=5.0).get("/metrics").text
    store.dispose()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1].isalpha()}


def test_alert_rules_are_well_formed_with_a_runbook_each() -> None:
    doc = yaml.safe_load(ALERTS.read_text())
    assert set(doc) == {"groups"}
    for group in doc["groups"]:
        assert isinstance(group["name"], str) and group["rules"]
        for rule in group["rules"]:
            assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"Canary[A-Z][A-Za-z]+", rule["alert"])
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"page", "ticket"}
            notes = rule["annotations"]
            assert set(notes) == {"summary", "description", "runbook"}
            assert all(isinstance(v, str) and v.strip() for v in notes.values())
            assert "`canary " in notes["runbook"], rule["alert"]  # names a command to run
            assert rule["expr"].count("(") == rule["expr"].count(")")


def test_every_alert_has_a_runbook_in_the_operations_docs() -> None:
    docs = (REPO / "docs" / "operations.md").read_text()
    runbooks = set(re.findall(r"^### (Canary\w+)$", docs, re.M))
    assert runbooks == {rule["alert"] for rule in rules()}


def test_the_prometheus_example_loads_the_rules() -> None:
    config = yaml.safe_load((ALERTS.parent / "prometheus.yml").read_text())
    assert config["rule_files"] == [ALERTS.name]


def test_the_alerts_cover_what_operators_page_on() -> None:
    by_name = {r["alert"]: r for r in rules()}
    assert {
        "CanaryRoundsStopped",
        "CanaryOpenRouterRefusesProbes",
        "CanaryNoConclusiveProbes",
        "CanaryNoRoundFinished",
        "CanaryIgnoreListStale",
        "CanaryFloorBreached",
        "CanaryQuarantineStarted",
        "CanaryProbeWeak",
        "CanaryBudgetSpent",
        "CanaryWebhookFailing",
    } == set(by_name)
    stopped = by_name["CanaryRoundsStopped"]["expr"]
    assert "3 * scalar(max(canary_round_interval_seconds))" in stopped
    assert by_name["CanaryProbeWeak"]["for"] == "6h"
    started = by_name["CanaryQuarantineStarted"]
    # observe mode (the default) starts no quarantine: the alert fires on what it would start
    assert "canary_quarantines_started_total" in started["expr"]
    assert "canary_would_quarantines_total" in started["expr"]
    for decision in ("quarantine", "would_quarantine"):
        assert f'"decision", "{decision}"' in started["expr"]
        assert f'decision="{decision}"' in started["annotations"]["runbook"]
    # a missing or rejected key pages within one round, not after three intervals
    refused = by_name["CanaryOpenRouterRefusesProbes"]
    assert 'canary_probe_transport_total{transport="auth_config"}' in refused["expr"]
    assert (refused["for"], refused["labels"]["severity"]) == ("0m", "page")
    assert '"probing": "auth_config"' in refused["annotations"]["runbook"]
    # rounds that finish yet judge nothing conclusively page too
    assert "canary_conclusive_probes" in by_name["CanaryNoConclusiveProbes"]["expr"]
    assert "canary_budget_left_usd" in by_name["CanaryBudgetSpent"]["expr"]
    assert "canary_webhook_failing_deliveries" in by_name["CanaryWebhookFailing"]["expr"]


def test_every_alert_expression_names_only_exported_metrics(exported: set[str]) -> None:
    for rule in rules():
        names = metric_names(rule["expr"])
        assert names, rule["alert"]
        assert names <= exported, (rule["alert"], names - exported)


def test_dashboard_is_templated_on_model_over_a_prometheus_datasource() -> None:
    board = dashboard()
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["model"]["type"] == "query" and variables["model"]["multi"] is True
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["datasource"]["uid"] == "${datasource}"
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            if "model" in target["expr"]:
                assert 'model=~"$model"' in target["expr"], panel["title"]


def test_dashboard_shows_states_floor_latency_cost_and_round_duration() -> None:
    used = set().union(*(metric_names(e) for e in dashboard_exprs(dashboard())))
    assert {
        "canary_endpoint_state",
        "canary_usable_endpoints",
        "canary_capacity_floor",
        "canary_ttft_percentile_seconds",
        "canary_ttft_peers_p95_seconds",
        "canary_round_cost_usd",
        "canary_cost_usd_today",
        "canary_last_round_duration_seconds",
        "canary_quarantines_started_total",
        "canary_would_quarantines_total",
    } <= used


def test_every_dashboard_expression_names_only_exported_metrics(exported: set[str]) -> None:
    board = dashboard()
    for expr in dashboard_exprs(board):
        names = metric_names(expr)
        assert names and names <= exported, (expr, names - exported)
    assert template_metrics(board) <= exported
