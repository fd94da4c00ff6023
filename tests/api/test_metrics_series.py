"""How many series one ``/metrics`` scrape gives at 2,000 endpoints (200 models x 10), counted on
a seeded store, against the 50,000 limit and against the table in docs/operations.md."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from metrics_fleet import fleet_client, fleet_models, seed_fleet, series_by_metric

from canary.config.settings import ProfileSettings
from canary.store.repository import Store

# a 2,000-endpoint fleet seeded and scraped: about 10 s of CPU, three times that on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MODELS, PER_MODEL = 200, 10
LIMIT = 50_000
README = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
# | `canary_endpoint_state` | gauge | model, provider, state | 5 per endpoint | 10,000 |
ROW = re.compile(r"^\| `(canary_\w+)` \|[^|]*\|[^|]*\|[^|]*\| ([\d,]+) \|$", re.M)
TOTAL = re.compile(r"^\| \*\*total\*\* \|[^|]*\|[^|]*\|[^|]*\| \*\*([\d,]+)\*\* \|$", re.M)


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('series') / 'canary.db'}")
    store.upgrade()
    models = fleet_models(MODELS)
    seed_fleet(store, models, PER_MODEL, NOW)
    # an entry is not an endpoint: a slug naming no listed endpoint adds no series
    store.add_exclusion(
        models[0], "gone", "left OpenRouter", "test", None, NOW, builtin=(), floor=0
    )
    # two task profiles over every model: their figures are per (model, profile), never per
    # endpoint and profile
    profiles = (
        ProfileSettings(name="chat", max_ttft_p95_s=2.0),
        ProfileSettings(name="batch", needs=("tools",), max_error_rate=0.1),
    )
    client = fleet_client(store, models, NOW, daily_budget_usd=5.0, profiles=profiles)
    response = client.get("/metrics")
    assert response.status_code == 200
    yield dict(series_by_metric(response.text))
    store.dispose()


def documented() -> tuple[dict[str, int], int]:
    text = README.read_text()
    section = text[text.index("## Metrics and alerts") :]
    rows = {name: int(n.replace(",", "")) for name, n in ROW.findall(section)}
    total = TOTAL.search(section)
    assert rows and total
    return rows, int(total.group(1).replace(",", ""))


def test_one_scrape_at_2000_endpoints_stays_under_50000_series(series: dict[str, int]) -> None:
    assert sum(series.values()) < LIMIT
    endpoints = MODELS * PER_MODEL
    assert series["canary_endpoint_state"] == 5 * endpoints
    assert series["canary_ttft_percentile_seconds"] == 6 * endpoints
    assert series["canary_last_round_success_timestamp_seconds"] == MODELS
    assert series["canary_profile_floor_breached"] == 2 * MODELS


def test_readme_counts_each_metric_as_a_scrape_does(series: dict[str, int]) -> None:
    rows, total = documented()
    assert rows == series
    assert total == sum(series.values())
