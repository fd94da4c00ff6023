"""``GET /metrics`` through the ASGI app: the fleet's figures read from a real store (SQLite and
PostgreSQL) and from the served lists, the same on every replica, re-read at most every 30 s."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from metrics_fleet import scraped
from ops_seed import MODEL, NOW, POLICY, TAGS, Api, builtin
from starlette.testclient import TestClient

from canary import __version__
from canary.api.app import create_app
from canary.core.events import event_of
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EventKind,
    Pricing,
    Result,
    RoundVerdict,
    Verdict,
)
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store

STATES = ("healthy", "suspect", "quarantined", "excluded", "unknown")


def rescrape(api: Api, after: timedelta = timedelta(seconds=30)) -> str:
    """A scrape once the store figures are due again."""
    api.clock.now += after
    response = api.client.get("/metrics")
    assert response.status_code == 200
    return response.text


def run_round(
    store: Store,
    model: str,
    at_minutes: int,
    results: dict[str, Sequence[ContractResult]] | None = None,
    *,
    status: str | None = "finished",
    listed: Sequence[str] = TAGS,
    extra: bool = False,
) -> int:
    """A round scheduled ``at_minutes`` after NOW that lists ``listed`` and lasts 45 s."""
    at = NOW + timedelta(minutes=at_minutes)
    rid = store.claim_round(model, at, "test", POLICY, {}, started_at=at)
    assert rid is not None
    endpoints = [
        Endpoint(model=model, tag=t, provider_name=t, pricing=Pricing(0, 0)) for t in listed
    ]
    store.record_snapshots(rid, model, endpoints, at)
    if results:
        verdicts = {
            tag: RoundVerdict(model, tag, Verdict.inconclusive, tuple(rs))
            for tag, rs in results.items()
        }
        store.record_verdicts(rid, model, verdicts)
    if status is not None:
        detail = {"extra": True} if extra else None
        store.finish_round(
            rid, status, cost_usd=0.001, detail=detail, at=at + timedelta(seconds=45)
        )
    return rid


def refusal(result: Result, reason: str | None = None) -> tuple[ContractResult, ...]:
    return (ContractResult(Contract.refusal, result, "role-play continuation", reason=reason),)


def test_every_endpoint_exports_every_state_with_its_own_set_to_1(api: Api) -> None:
    text = api.client.get("/metrics").text
    providers = api.client.get("/v1/providers", params={"model": api.model}).json()["providers"]
    expected = {p["provider"]: p["state"] for p in providers}
    assert set(expected) == set(TAGS)
    for tag, state in expected.items():
        values = {
            s: scraped(text, "canary_endpoint_state", model=api.model, provider=tag, state=s)
            for s in STATES
        }
        assert values == {s: (1.0 if s == state else 0.0) for s in STATES}, tag
    assert expected["bravo"] == "quarantined" and expected["delta"] == "excluded"
    assert expected["charlie/fp8"] == "suspect" and expected["alpha"] == "healthy"


def test_the_floor_usable_endpoints_and_withheld_quarantines_follow_the_served_list(
    api: Api,
) -> None:
    text = api.client.get("/metrics").text
    m = api.model
    assert scraped(text, "canary_capacity_floor", model=m) == 2
    assert scraped(text, "canary_usable_endpoints", model=m) == 3  # alpha, charlie/fp8, foxtrot
    assert scraped(text, "canary_floor_breached", model=m) == 0
    assert scraped(text, "canary_quarantines_withheld", model=m) == 0
    assert scraped(text, "canary_quarantines_active", model=m) == 1
    assert scraped(text, "canary_ignore_list_entries", model=m) == 3

    def force_out(tag: str) -> None:
        api.store.add_exclusion(
            m, tag, "incident", "test", None, NOW, builtin=builtin(m), floor=2, force=True
        )
        assert api.service.refresh()

    force_out("alpha")
    force_out("charlie/fp8")  # only foxtrot left: bravo's quarantine is withheld to hold 2
    text = api.client.get("/metrics").text  # the lists are read from memory at every scrape
    assert scraped(text, "canary_usable_endpoints", model=m) == 2
    assert scraped(text, "canary_quarantines_withheld", model=m) == 1
    assert scraped(text, "canary_quarantines_active", model=m) == 0
    assert scraped(text, "canary_floor_breached", model=m) == 0
    force_out("foxtrot")
    text = api.client.get("/metrics").text
    assert scraped(text, "canary_usable_endpoints", model=m) == 1
    assert scraped(text, "canary_floor_breached", model=m) == 1


def test_the_last_success_is_the_end_of_the_latest_finished_scheduled_round(api: Api) -> None:
    text = api.client.get("/metrics").text
    seeded_end = NOW - timedelta(minutes=28)  # the second seeded round: 30 min ago, 2 min long
    assert scraped(text, "canary_last_round_success_timestamp_seconds", model=api.model) == (
        seeded_end.timestamp()
    )
    assert scraped(text, "canary_last_round_duration_seconds", model=api.model) == 120
    assert scraped(text, "canary_round_interval_seconds") == 1800
    run_round(api.store, api.model, 0, status="abandoned")
    run_round(api.store, api.model, 10, extra=True)  # canary round --now: decides nothing
    run_round(api.store, api.model, 30, status=None)  # still running
    text = rescrape(api)
    assert scraped(text, "canary_last_round_success_timestamp_seconds", model=api.model) == (
        seeded_end.timestamp()
    )
    run_round(api.store, api.model, 60)
    text = rescrape(api)
    end = NOW + timedelta(minutes=60, seconds=45)
    assert scraped(text, "canary_last_round_success_timestamp_seconds", model=api.model) == (
        end.timestamp()
    )
    assert scraped(text, "canary_last_round_duration_seconds", model=api.model) == 45
    assert scraped(text, "canary_round_cost_usd", model=api.model) == 0.001


def test_probe_weak_follows_the_refusal_results_of_the_latest_finished_round(api: Api) -> None:
    m = api.model
    assert scraped(api.client.get("/metrics").text, "canary_probe_weak", model=m) == 0
    weak = refusal(Result.inconclusive, "probe_weak")
    run_round(api.store, m, 0, {"alpha": weak, "foxtrot": weak})
    assert scraped(rescrape(api), "canary_probe_weak", model=m) == 1
    run_round(api.store, m, 30, {"alpha": refusal(Result.passed)})
    assert scraped(rescrape(api), "canary_probe_weak", model=m) == 0
    run_round(api.store, m, 60, {"alpha": refusal(Result.inconclusive, "control_missing")})
    assert scraped(rescrape(api), "canary_probe_weak", model=m) == 1
    run_round(api.store, m, 90, status="abandoned")  # decides nothing: the last finished stands
    assert scraped(rescrape(api), "canary_probe_weak", model=m) == 1


def test_quarantines_started_only_grows_while_active_ones_end(api: Api) -> None:
    text = api.client.get("/metrics").text
    assert scraped(text, "canary_quarantines_started_total", model=api.model) == 1
    api.store.release_quarantine(api.model, "bravo", "test", "false positive", NOW)
    assert api.service.refresh()
    text = rescrape(api)
    assert scraped(text, "canary_quarantines_started_total", model=api.model) == 1
    assert scraped(text, "canary_quarantines_active", model=api.model) == 0
    assert (
        scraped(text, "canary_endpoint_state", model=api.model, provider="bravo", state="healthy")
        == 1
    )


def test_would_quarantines_count_observe_modes_decisions_and_only_grow(api: Api) -> None:
    def would(text: str, model: str = api.model) -> float | None:
        return scraped(text, "canary_would_quarantines_total", model=model)

    assert would(api.client.get("/metrics").text) == 0  # exported from 0, so increase() sees 1
    for tag in ("alpha", "foxtrot"):
        event = event_of(EventKind.would_quarantine, api.model, tag, {"causes": ["hygiene"]}, ())
        api.store.record_audit(event, "canary", POLICY, NOW)
    other = event_of(EventKind.would_quarantine, "acme/other-1", "alpha", {"causes": ["ttft"]}, ())
    api.store.record_audit(other, "canary", POLICY, NOW)  # not a watched model
    enforced = event_of(EventKind.quarantine, api.model, "alpha", {"reason": "test"}, ())
    api.store.record_audit(enforced, "canary", POLICY, NOW)  # counted by quarantines_started
    text = rescrape(api)
    assert would(text) == 2
    assert would(text, "acme/other-1") is None
    assert scraped(text, "canary_quarantines_started_total", model=api.model) == 1


def test_build_info_names_the_package_version(api: Api) -> None:
    text = api.client.get("/metrics").text
    assert scraped(text, "canary_build_info", version=__version__) == 1


def test_the_budget_is_exported_only_when_one_is_configured(make_api: object) -> None:
    without = make_api()  # type: ignore[operator]
    text = without.client.get("/metrics").text
    assert "canary_budget_left_usd" not in text and "canary_daily_budget_usd" not in text
    assert scraped(text, "canary_cost_usd_today") is not None
    budgeted = make_api(daily_budget_usd=10.0)  # type: ignore[operator]
    text = budgeted.client.get("/metrics").text
    today = scraped(text, "canary_cost_usd_today")
    assert today is not None and today > 0
    assert scraped(text, "canary_daily_budget_usd") == 10.0
    assert scraped(text, "canary_budget_left_usd") == 10.0 - today


def test_failing_webhook_deliveries_are_tried_failed_and_still_owed(api: Api) -> None:
    def failing() -> float | None:
        return scraped(rescrape(api), "canary_webhook_failing_deliveries")

    before = failing()
    assert before is not None
    event = event_of(EventKind.quarantine, api.model, "alpha", {"reason": "test"}, ())
    tried = api.store.record_audit(event, "canary", POLICY, NOW)
    api.store.record_audit(event, "canary", POLICY, NOW)  # never tried: not failing
    assert failing() == before
    api.store.mark_notify_failed(tried, NOW + timedelta(minutes=1))
    assert failing() == before + 1
    api.store.mark_notified(tried, NOW + timedelta(minutes=1))
    assert failing() == before


def test_ttft_percentiles_and_peers_come_from_the_store_histograms(api: Api) -> None:
    text = api.client.get("/metrics").text

    def ttft(tag: str, window: str, percentile: str) -> float | None:
        return scraped(
            text,
            "canary_ttft_percentile_seconds",
            model=api.model,
            provider=tag,
            window=window,
            percentile=percentile,
        )

    assert (ttft("echo", "24h", "p50"), ttft("echo", "24h", "p95")) == (1.01, 1.02)
    assert ttft("foxtrot", "24h", "p99") == 7.52 and ttft("foxtrot", "7d", "p95") == 7.52
    peers = scraped(text, "canary_ttft_peers_p95_seconds", model=api.model, provider="foxtrot")
    assert peers == 1.02  # the median of the five others' p95
    assert scraped(text, "canary_latency_degraded", model=api.model, provider="foxtrot") == 1
    text = rescrape(api, timedelta(days=2))  # nothing in the last 24 h, the week still counts
    assert ttft("foxtrot", "24h", "p95") is None and ttft("foxtrot", "7d", "p95") == 7.52
    assert (
        scraped(text, "canary_ttft_peers_p95_seconds", model=api.model, provider="foxtrot") is None
    )
    assert scraped(text, "canary_latency_degraded", model=api.model, provider="foxtrot") == 0


def test_an_endpoint_that_left_the_listing_is_dropped_unless_it_is_quarantined(api: Api) -> None:
    listed = [t for t in TAGS if t not in ("foxtrot", "bravo", "delta")]
    run_round(api.store, api.model, 0, listed=listed)
    text = rescrape(api)
    labels = {"model": api.model, "state": "healthy"}
    assert scraped(text, "canary_endpoint_state", provider="foxtrot", **labels) is None
    # delta's runtime entry is still published, but an entry is not an endpoint
    assert scraped(text, "canary_endpoint_state", model=api.model, provider="delta") is None
    assert scraped(text, "canary_latency_degraded", model=api.model, provider="foxtrot") is None
    assert (
        scraped(
            text, "canary_endpoint_state", model=api.model, provider="bravo", state="quarantined"
        )
        == 1
    )
    assert scraped(text, "canary_endpoint_state", provider="alpha", **labels) == 1


def test_a_replica_that_ran_no_round_exports_the_same_store_figures(api: Api) -> None:
    other = IgnoreListService(api.store, builtin(api.model), [api.model], POLICY, api.clock)
    assert other.refresh()
    replica = TestClient(create_app(api.settings, api.store, other, clock=api.clock))

    def fleet_lines(text: str) -> list[str]:
        return [
            line
            for line in text.splitlines()
            if f'model="{api.model}"' in line and "canary_ignore_list_age" not in line
        ]

    ours = fleet_lines(api.client.get("/metrics").text)
    assert len(ours) > 50
    assert fleet_lines(replica.get("/metrics").text) == ours


def test_store_figures_are_read_at_most_every_30_seconds(api: Api) -> None:
    def last_success(text: str) -> float | None:
        return scraped(text, "canary_last_round_success_timestamp_seconds", model=api.model)

    first = last_success(api.client.get("/metrics").text)
    run_round(api.store, api.model, 0)
    api.clock.now += timedelta(seconds=29)
    assert last_success(api.client.get("/metrics").text) == first  # not yet re-read
    api.clock.now += timedelta(seconds=1)
    assert (
        last_success(api.client.get("/metrics").text) == (NOW + timedelta(seconds=45)).timestamp()
    )


def _break(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{path}{suffix}.away")
    path.mkdir()  # a directory where the database was: every connection fails


def test_with_the_store_gone_metrics_keep_the_last_figures_and_never_fail(tmp_path: Path) -> None:
    path = tmp_path / "canary.db"
    store = Store(f"sqlite:///{path}")
    store.upgrade()
    api = Api(store, model=MODEL)
    before = api.client.get("/metrics").text
    store.dispose()
    _break(path)
    assert api.service.refresh() is False

    text = rescrape(api, timedelta(seconds=90))
    state = {"model": MODEL, "provider": "bravo", "state": "quarantined"}
    assert scraped(text, "canary_endpoint_state", **state) == 1
    assert scraped(text, "canary_quarantines_started_total", model=MODEL) == 1
    assert scraped(text, "canary_store_figures_age_seconds") == 90
    assert scraped(text, "canary_ignore_list_stale", model=MODEL) == 1
    assert scraped(before, "canary_store_figures_age_seconds") == 0
    assert (scraped(before, "canary_store_up"), scraped(text, "canary_store_up")) == (1, 0)

    # a replica that never read the store still answers: the constants and its lists
    fresh = TestClient(create_app(api.settings, store, api.service, clock=api.clock))
    response = fresh.get("/metrics")
    assert response.status_code == 200
    assert scraped(response.text, "canary_build_info", version=__version__) == 1
    assert scraped(response.text, "canary_usable_endpoints", model=MODEL) == 3
    assert "canary_endpoint_state" not in response.text
    assert scraped(response.text, "canary_store_up") == 0  # said, not left out
    store.dispose()
