"""Fail static: with the store gone, the last good list is served marked stale, never a 5xx,
never an empty or partial list; when the store is back the next refresh serves it fresh again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ops_seed import MODEL, Api, quarantine, seed
from sqlalchemy import create_engine, make_url, text
from sqlite_template import migrated_sqlite

from canary.core.model import Contract
from canary.store.repository import Store


def _assert_serves_stale(api: Api, fresh: dict, fresh_etag: str) -> str:
    response = api.client.get("/v1/ignore-list", params={"model": api.model})
    assert response.status_code == 200
    doc = response.json()
    assert doc["stale"] is True
    assert doc["ignore"] == fresh["ignore"] and doc["entries"] == fresh["entries"]
    assert doc["generated_at"] == fresh["generated_at"]  # the time of the last good read
    assert response.headers["etag"] != fresh_etag
    again = api.client.get(
        "/v1/ignore-list", params={"model": api.model}, headers={"If-None-Match": fresh_etag}
    )
    assert again.status_code == 200 and again.json()["stale"] is True
    return response.headers["etag"]


def _assert_degrades_without_5xx_on_the_list(api: Api) -> None:
    assert api.client.get("/healthz").status_code == 200
    ready = api.client.get("/readyz")
    assert ready.status_code == 503 and "the store is unreachable" in ready.json()["reasons"]
    providers = api.client.get("/v1/providers", params={"model": api.model})
    assert providers.status_code == 503 and "unreachable" in providers.json()["error"]
    assert api.client.get("/v1/cost").status_code == 503
    page = api.client.get("/")
    assert (
        page.status_code == 200
        and "store unreachable" in page.text
        and ">stale</span>" in page.text
    )
    metrics = api.client.get("/metrics").text
    assert f'canary_ignore_list_stale{{model="{api.model}"}} 1.0' in metrics


def test_sqlite_store_gone_serves_the_last_list_stale_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "canary.db"
    store = Store(migrated_sqlite(path))
    api = Api(store, model=MODEL)
    first = api.client.get("/v1/ignore-list", params={"model": MODEL})
    fresh, fresh_etag = first.json(), first.headers["etag"]

    store.dispose()
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{path}{suffix}.away")
    path.mkdir()  # a directory where the database was: every connection fails

    assert api.service.refresh() is False
    _assert_serves_stale(api, fresh, fresh_etag)
    _assert_degrades_without_5xx_on_the_list(api)

    store.dispose()
    path.rmdir()
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}.away").exists():
            os.replace(f"{path}{suffix}.away", f"{path}{suffix}")
    assert api.service.refresh() is True
    back = api.client.get("/v1/ignore-list", params={"model": MODEL}).json()
    assert back["stale"] is False and back["ignore"] == fresh["ignore"]
    store.dispose()


def test_a_needs_variant_fails_static_too(tmp_path: Path) -> None:
    """With the store gone, a variant is served stale from the last good read, never empty,
    also one asked for the first time during the outage."""
    path = tmp_path / "canary.db"
    store = Store(migrated_sqlite(path))
    api = Api(store, model=MODEL)
    quarantine(api, "alpha", Contract.schema, minutes_ago=20)
    assert api.service.refresh()

    def variant(needs: str) -> tuple[dict, str]:
        response = api.client.get("/v1/ignore-list", params={"model": MODEL, "needs": needs})
        assert response.status_code == 200
        return response.json(), response.headers["etag"]

    fresh, fresh_etag = variant("tools")
    assert fresh["stale"] is False and fresh["ignore"] == ["bravo", "delta", "echo"]
    structured_fresh, _ = variant("structured_outputs")
    store.dispose()
    path.unlink()
    path.mkdir()  # a directory where the database was: every connection fails

    assert api.service.refresh() is False
    stale, stale_etag = variant("tools")
    assert stale["stale"] is True and stale_etag != fresh_etag
    assert stale["ignore"] == fresh["ignore"] and stale["entries"] == fresh["entries"]
    assert stale["generated_at"] == fresh["generated_at"] and stale["needs"] == ["tools"]
    first_time, _ = variant("structured_outputs,tools")  # never asked before the outage
    assert first_time["stale"] is True
    assert first_time["ignore"] == structured_fresh["ignore"] == ["alpha", "bravo", "delta", "echo"]
    store.dispose()


@pytest.mark.postgres
def test_postgres_database_dropped_serves_the_last_list_stale_then_recovers(
    postgres_url: str,
) -> None:
    url = make_url(postgres_url)
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    store = Store(postgres_url)
    store.upgrade()
    try:
        api = Api(store, model=MODEL)
        first = api.client.get("/v1/ignore-list", params={"model": MODEL})
        fresh, fresh_etag = first.json(), first.headers["etag"]

        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{url.database}" WITH (FORCE)'))
        assert api.service.refresh() is False
        stale_etag = _assert_serves_stale(api, fresh, fresh_etag)
        _assert_degrades_without_5xx_on_the_list(api)
        assert api.service.refresh() is False  # still down: still the same stale list
        assert (
            api.client.get("/v1/ignore-list", params={"model": MODEL}).headers["etag"] == stale_etag
        )

        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{url.database}"'))
        store.upgrade()
        seed(store, MODEL)
        assert api.service.refresh() is True  # no manual step: the pool reconnects
        back = api.client.get("/v1/ignore-list", params={"model": MODEL}).json()
        assert back["stale"] is False and back["ignore"] == fresh["ignore"]
        assert api.client.get("/readyz").status_code == 200
    finally:
        store.dispose()
        admin.dispose()
