"""An entry is not an endpoint: a provider slug excluded at runtime (``delta``, naming the listed
``delta/turbo``) is shown as an entry of the list, never as a provider of its own, in the views,
the metrics and the status page (SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import pytest
from metrics_fleet import series_by_metric
from ops_seed import NOW, POLICY, Clock, relist, settings
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store

LISTED = ("alpha", "bravo", "delta/turbo")
_models = itertools.count(1)


@pytest.fixture
def client(store: Store) -> tuple[str, TestClient]:
    model = f"acme/entries-{next(_models)}"
    relist(store, model, LISTED, NOW - timedelta(minutes=30))
    store.add_exclusion(
        model, "delta", "incident 7: timeouts", "test", None, NOW - timedelta(minutes=10),
        builtin=(), floor=0,
    )  # fmt: skip
    clock = Clock()
    service = IgnoreListService(store, (), [model], POLICY, clock)
    assert service.refresh()
    app = create_app(settings(store.url, model), store, service, clock=clock)
    return model, TestClient(app)


def test_providers_are_the_listed_endpoints_and_name_the_entry_that_excludes_one(
    client: tuple[str, TestClient],
) -> None:
    model, http = client
    providers = http.get("/v1/providers", params={"model": model}).json()["providers"]
    assert sorted(p["provider"] for p in providers) == sorted(LISTED)
    turbo = next(p for p in providers if p["provider"] == "delta/turbo")
    assert turbo["state"] == "excluded"
    [entry] = turbo["exclusions"]
    assert (entry["provider"], entry["layer"], entry["reason"]) == (
        "delta",
        "runtime",
        "incident 7: timeouts",
    )


def test_metrics_export_one_state_per_listed_endpoint_and_none_for_the_entry(
    client: tuple[str, TestClient],
) -> None:
    model, http = client
    text = http.get("/metrics").text
    states = {
        m.group(1)
        for m in re.finditer(rf'canary_endpoint_state\{{model="{model}",provider="([^"]+)"', text)
    }
    assert states == set(LISTED)
    assert series_by_metric(text)["canary_endpoint_state"] == 5 * len(LISTED)
    assert (
        f'canary_endpoint_state{{model="{model}",provider="delta/turbo",state="excluded"}} 1.0'
        in text
    )


def test_the_status_page_shows_the_entry_in_the_list_and_no_provider_row_for_it(
    client: tuple[str, TestClient],
) -> None:
    model, http = client
    page = http.get("/").text
    section = page[page.index(f"<section><h2>{model} ") :]
    section = section[: section.index("</section>")]
    rows = re.findall(r'<tr class="state-[a-z]+"><td><code>([^<]+)</code>', section)
    assert sorted(rows) == sorted(LISTED)
    assert "<li><code>delta</code>" in section  # the entry, in the published list
