"""Task profiles through the ASGI app against a real store (SQLite and PostgreSQL): the figures a
profile is held to are read from the store's 24 h summaries (``latency_figures``,
``error_figures``), each (model, profile) list has its own ETag, and the plain list does not
change (issue 36)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import endpoint, observation
from metrics_fleet import scraped
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.config.settings import MaxPrice, ModelSettings, ProfileSettings, Settings
from canary.core.model import Contract, Transport
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/profiled-1"  # the batch profile's model; every test seeds models of its own
OTHER = "acme/other-2"
_runs = itertools.count(1)
TAGS = ("alpha", "bravo", "charlie", "slow", "flaky")


def seed(store: Store, model: str, now: datetime, *, samples: int = 24) -> None:
    """(The store is the module's: a model claimed once, so each test seeds at a moment of its
    own.) One finished round 10 minutes ago: ``samples`` ttft probes per endpoint (slow: 4 s), and
    flaky's probes half 5xx/timeouts (plus 429s, which count for nothing)."""
    at = now - timedelta(minutes=10)
    rid = store.claim_round(model, at, "seed", "p-1", {}, started_at=at)
    assert rid is not None
    listing = [
        endpoint(t, "tools", model=model, price=9e-6 if t == "charlie" else 1e-7,
                 context_length=8192 if t == "bravo" else 131072)
        for t in TAGS
    ]  # fmt: skip
    store.record_snapshots(rid, model, listing, at)
    observations = []
    for tag in TAGS:
        for i in range(samples):
            if tag == "flaky" and i % 2:
                wire = Transport.provider_error if i % 4 == 1 else Transport.timeout
                observations.append(observation(Contract.ttft, tag, wire, nonce=f"{tag}{i}"))
                observations.append(
                    observation(Contract.ttft, tag, Transport.rate_limited, nonce=f"{tag}r{i}")
                )
                continue
            seconds = 4.0 if tag == "slow" else 0.5 + i / 100
            observations.append(
                observation(Contract.ttft, tag, ttft_s=seconds, nonce=f"{tag}{i}", attempt=i + 1)
            )
    store.record_observations(rid, model, observations, at)
    store.finish_round(rid, "finished", at=at + timedelta(minutes=2))


PROFILES = (
    ProfileSettings(name="chat", max_ttft_p95_s=2.0),
    ProfileSettings(name="batch", models=(MODEL,), max_error_rate=0.2,
                    max_price=MaxPrice(prompt=1.0), min_context_length=32768),
    ProfileSettings(name="json", models=(MODEL,), needs=("structured_outputs",)),
)  # fmt: skip


def client(store: Store, now: datetime, *models: str) -> TestClient:
    settings = Settings(
        database_url=store.url, models=tuple(ModelSettings(id=m) for m in models),
        profiles=PROFILES,
    )  # fmt: skip
    service = IgnoreListService(
        store, (), list(models), "p-1", lambda: now, profiles=settings.profile_rules
    )
    assert service.refresh()
    return TestClient(create_app(settings, store, service, clock=lambda: now))


@pytest.fixture
def now() -> datetime:
    """Three days after the previous test's: its rounds are out of this one's 24 h."""
    return NOW + timedelta(days=3 * next(_runs))


def get(http: TestClient, model: str = MODEL, **params: Any) -> Any:
    response = http.get("/v1/ignore-list", params={"model": model, **params})
    assert response.status_code == 200, response.text
    return response


def test_a_slow_endpoint_is_on_the_profiles_list_only(store: Store, now: datetime) -> None:
    seed(store, MODEL, now)
    http = client(store, now, MODEL)
    plain, chat = get(http), get(http, profile="chat")
    assert plain.json()["ignore"] == [] and "profile" not in plain.json()
    doc = chat.json()
    assert doc["ignore"] == ["slow"]
    [entry] = doc["entries"]
    assert entry["layer"] == "requirement"
    assert entry["reason"] == "max_ttft_p95_s: p95 ttft 4.0 s > 2 s over 24 h, 24 samples"
    assert doc["profile"]["name"] == "chat" and doc["profile"]["settings_hash"].startswith("s-")
    assert doc["needs"] is None  # no needs: every quarantine applies, as on the plain list
    assert doc["floor_breached"] is False and doc["usable_endpoints"] == 4
    assert chat.headers["etag"] != plain.headers["etag"]
    again = http.get(
        "/v1/ignore-list", params={"model": MODEL, "profile": "chat"},
        headers={"If-None-Match": chat.headers["etag"]},
    )  # fmt: skip
    assert again.status_code == 304
    assert http.get(
        "/v1/ignore-list", params={"model": MODEL},
        headers={"If-None-Match": chat.headers["etag"]},
    ).status_code == 200  # fmt: skip


def test_nineteen_samples_never_exclude(store: Store, now: datetime) -> None:
    seed(store, MODEL, now, samples=19)
    assert get(client(store, now, MODEL), profile="chat").json()["ignore"] == []


def test_error_rate_price_and_context_each_name_their_measure(store: Store, now: datetime) -> None:
    seed(store, MODEL, now)
    doc = get(client(store, now, MODEL), profile="batch").json()
    reasons = {e["provider"]: e["reason"] for e in doc["entries"]}
    # flaky: 12 of 24 counted probes failed (its 12 429s are in neither count)
    assert reasons == {
        "bravo": "min_context_length: context length 8192 < 32768",
        "charlie": "max_price: prompt price 9 > 1 USD/M tokens",
        "flaky": "max_error_rate: 12 of 24 probes failed (5xx, timeout, disconnect) "
        "= 50.0% > 20.0% over 24 h",
    }


def test_needs_add_to_the_profile_and_unknown_profiles_are_404s(
    store: Store, now: datetime
) -> None:
    seed(store, MODEL, now)
    seed(store, OTHER, now)
    http = client(store, now, MODEL, OTHER)
    doc = get(http, profile="chat", needs="structured_outputs").json()
    assert doc["needs"] == ["structured_outputs"]
    # nothing advertises it: no endpoint can serve the task, none is withheld, the floor is
    # breached (the helper then applies no list for it)
    assert doc["ignore"] == sorted(TAGS) and doc["withheld"] == []
    assert doc["usable_endpoints"] == 0 and doc["floor_breached"] is True
    missing = http.get("/v1/ignore-list", params={"model": MODEL, "profile": "voice"})
    assert missing.status_code == 404 and missing.json()["known"] == ["batch", "chat", "json"]
    uncovered = http.get("/v1/ignore-list", params={"model": OTHER, "profile": "batch"})
    assert uncovered.status_code == 404 and uncovered.json()["known"] == ["chat"]
    both = get(http, OTHER, profile="chat")
    assert both.json()["ignore"] == ["slow"]
    joined = http.get(f"/v1/ignore-list?model={MODEL}&model={OTHER}&profile=chat")
    assert [d["ignore"] for d in joined.json()["lists"]] == [["slow"], ["slow"]]


@pytest.mark.parametrize("profile", ["chat", "batch"])
def test_the_plain_list_and_needs_lists_are_unchanged_by_profiles(
    store: Store, now: datetime, profile: str
) -> None:
    seed(store, MODEL, now)
    with_profiles = client(store, now, MODEL)
    service = IgnoreListService(store, (), [MODEL], "p-1", lambda: now)
    assert service.refresh()
    for needs in (frozenset(), frozenset({"tools"})):
        body = get(with_profiles, needs=",".join(needs)).content
        assert body == service.published(MODEL, needs).body
    assert get(with_profiles, profile=profile).content != service.published(MODEL).body


def test_a_profiles_floor_has_a_metric_of_its_own(store: Store, now: datetime) -> None:
    """json's list is breached (nothing advertises structured outputs), the plain list is not:
    the plain floor metric (and its alert) stays 0 and carries no profile label."""
    seed(store, MODEL, now)
    text = client(store, now, MODEL).get("/metrics").text
    assert scraped(text, "canary_floor_breached", model=MODEL) == 0
    assert 'canary_floor_breached{model="' + MODEL + '",profile' not in text
    assert scraped(text, "canary_profile_floor_breached", model=MODEL, profile="json") == 1
    assert scraped(text, "canary_profile_floor_breached", model=MODEL, profile="chat") == 0
    assert scraped(text, "canary_profile_requirement_excluded", model=MODEL, profile="chat") == 1
    assert scraped(text, "canary_profile_usable_endpoints", model=MODEL, profile="batch") == 2


def test_a_refresh_reads_the_figures_of_the_models_a_profile_covers_only(
    store: Store, now: datetime
) -> None:
    """The 24 h figures are read for the models some profile covers: none without a profile,
    and not those of a model no profile covers; every list is the same as when all were read."""
    from sqlalchemy import event

    seed(store, MODEL, now)
    seed(store, OTHER, now)
    read: list[tuple[str, list[object]]] = []

    def sent(conn: object, cursor: object, statement: str, parameters: object, *_: object) -> None:
        values = parameters.values() if isinstance(parameters, dict) else parameters
        read.append((statement, list(values or ())))

    def figures_read() -> list[list[object]]:
        return [p for s, p in read if "latency_figures" in s or "error_figures" in s]

    def refreshed(profiles: tuple[ProfileSettings, ...]) -> IgnoreListService:
        rules = tuple(p.rules for p in profiles)
        service = IgnoreListService(store, (), [MODEL, OTHER], "p-1", lambda: now, profiles=rules)
        read.clear()
        event.listen(store.engine, "before_cursor_execute", sent)
        try:
            assert service.refresh()
        finally:
            event.remove(store.engine, "before_cursor_execute", sent)
        return service

    plain = refreshed(())
    assert read and figures_read() == []  # the layers were read, no figure
    batch = PROFILES[1]  # covers MODEL only
    one = refreshed((batch,))
    assert len(figures_read()) == 2  # the latency and the error figures, of MODEL alone
    assert all(MODEL in p and OTHER not in p for p in figures_read())
    every = refreshed(PROFILES)  # chat covers every model
    assert all(MODEL in p and OTHER in p for p in figures_read())
    for model in (MODEL, OTHER):  # the plain lists: byte for byte, ETag too
        assert one.published(model).body == plain.published(model).body
        assert one.published(model).etag == every.published(model).etag
    assert (
        one.published(MODEL, profile="batch").etag == every.published(MODEL, profile="batch").etag
    )
    assert one.published(MODEL, profile="batch").document["ignore"] == ["bravo", "charlie", "flaky"]
    layers = one.published(OTHER).layers
    assert layers is not None and layers.measured == {}  # no profile covers it
