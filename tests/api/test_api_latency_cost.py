"""Latency health and probe cost through the ASGI app, against a real store (both backends)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from ops_seed import ADVERTISED, NOW, POLICY, ROUND_COSTS, TTFT, Api

from canary.store.repository import Store


def _providers(api: Api) -> dict[str, dict]:
    response = api.client.get("/v1/providers", params={"model": api.model})
    assert response.status_code == 200
    return {p["provider"]: p for p in response.json()["providers"]}


def test_latency_is_a_field_of_its_own_beside_peers_and_openrouter(reader: Api) -> None:
    providers = _providers(reader)
    foxtrot = providers["foxtrot"]
    assert foxtrot["state"] == "healthy"  # slow is information: never a routing state
    others_p95 = sorted(round(t + 0.02, 3) for tag, t in TTFT.items() if tag != "foxtrot")
    assert foxtrot["latency"] == {
        "state": "degraded",
        "p95_bound_s": 5.0,
        "peers_p95_24h_s": others_p95[2],  # the median of the five others' p95
        "peers": 5,
        "openrouter_last_30m_ms": ADVERTISED,
    }
    assert foxtrot["ttft_s"]["24h"]["p95"] == 7.52 and foxtrot["ttft_s"]["7d"]["p95"] == 7.52
    assert providers["alpha"]["latency"]["state"] == "healthy"


def test_without_samples_in_24h_latency_is_unknown_but_the_week_still_shows(api: Api) -> None:
    api.clock.now = NOW + timedelta(days=2)
    foxtrot = _providers(api)["foxtrot"]
    assert foxtrot["latency"]["state"] == "unknown" and foxtrot["latency"]["peers"] == 0
    assert foxtrot["ttft_s"]["24h"]["n"] == 0 and foxtrot["ttft_s"]["7d"]["p95"] == 7.52


def test_providers_carry_the_models_cost(reader: Api) -> None:
    body = reader.client.get("/v1/providers", params={"model": reader.model}).json()
    cost = body["cost"]
    assert cost["last_round"]["id"] == reader.seeded.rounds[1]
    assert cost["last_round"]["cost_usd"] == pytest.approx(ROUND_COSTS[1])
    assert cost["last_round"]["skipped"] == []
    assert cost["last_24h_usd"] == pytest.approx(sum(ROUND_COSTS))
    assert cost["today_usd"] == pytest.approx(sum(ROUND_COSTS))
    assert cost["day"]["day_start"] == "2026-05-01T00:00:00Z"
    assert cost["day"]["daily_budget_usd"] is None and cost["day"]["budget_left_usd"] is None


def test_cost_lists_every_model_and_the_day_with_the_budget_left(make_api: object) -> None:
    api = make_api(daily_budget_usd=10.0)  # type: ignore[operator]
    other = make_api()  # type: ignore[operator]
    body = api.client.get("/v1/cost").json()
    models = {m["model"]: m for m in body["models"]}
    assert {api.model, other.model} <= set(models)
    assert models[api.model]["today_usd"] == pytest.approx(sum(ROUND_COSTS))
    day = body["day"]
    assert day["today_usd"] == pytest.approx(sum(m["today_usd"] for m in models.values()))
    assert day["today_usd"] >= 2 * sum(ROUND_COSTS)
    assert day["daily_budget_usd"] == 10.0
    assert day["budget_left_usd"] == pytest.approx(10.0 - day["today_usd"])


def test_cost_of_a_new_day_starts_at_zero_and_24h_rolls(api: Api) -> None:
    api.clock.now = NOW + timedelta(hours=13)  # 01:00 the next day: 14 and 13.5 h after the rounds
    cost = api.client.get("/v1/providers", params={"model": api.model}).json()["cost"]
    assert cost["today_usd"] == 0.0 and cost["last_24h_usd"] == pytest.approx(sum(ROUND_COSTS))
    api.clock.now = NOW + timedelta(hours=23, minutes=15)  # the first round is 24 h 15 min old
    cost = api.client.get("/v1/providers", params={"model": api.model}).json()["cost"]
    assert cost["last_24h_usd"] == pytest.approx(ROUND_COSTS[1])


def test_a_rounds_skipped_endpoints_show_in_the_api_and_on_the_page(store: Store, api: Api) -> None:
    at = NOW - timedelta(minutes=5)
    rid = store.claim_round(api.model, at, "test", POLICY, {}, started_at=at)
    assert rid is not None
    skipped = [{"provider": "foxtrot", "reason": "budget: sampled out of 0.01 USD left"}]
    store.finish_round(rid, "finished", cost_usd=0.001, skipped=skipped, at=at)
    cost = api.client.get("/v1/providers", params={"model": api.model}).json()["cost"]
    assert cost["last_round"]["id"] == rid and cost["last_round"]["skipped"] == skipped
    html = api.client.get("/").text
    assert "skipped last round: foxtrot (budget: sampled out of 0.01 USD left)" in html


def test_the_status_page_shows_latency_and_one_cost_line(reader: Api) -> None:
    html = reader.client.get("/").text
    row = re.search(r"<code>foxtrot</code>.*?</tr>", html, re.S)
    assert (
        row
        and ">degraded</span>" in row.group(0)
        and "OpenRouter p50 0.64 / p99 4.00 s" in (row.group(0))
    )
    assert "Probe cost: last round $0.0025 · 24 h $0.0040 · today $0.0040" in html


def test_metrics_show_latency_per_window_degraded_flags_and_cost(reader: Api) -> None:
    text = reader.client.get("/metrics").text
    labels = f'model="{reader.model}",provider="foxtrot"'
    p95 = f'model="{reader.model}",percentile="p95",provider="foxtrot"'  # labels in name order
    assert f'canary_ttft_percentile_seconds{{{p95},window="24h"}} 7.52' in text
    assert f'canary_ttft_percentile_seconds{{{p95},window="7d"}} 7.52' in text
    assert f"canary_latency_degraded{{{labels}}} 1.0" in text
    assert f'canary_latency_degraded{{model="{reader.model}",provider="alpha"}} 0.0' in text
    assert f'canary_round_cost_usd{{model="{reader.model}"}} {ROUND_COSTS[1]}' in text
    today = float(re.search(r"^canary_cost_usd_today (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]
    assert today >= sum(ROUND_COSTS)
