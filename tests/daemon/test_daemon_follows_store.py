"""A serving process follows the store, whoever writes it: what an operator command (another
connection) writes reaches the daemon's list at its next housekeeping (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.config.settings import ModelSettings, Settings
from canary.service.daemon import Daemon
from canary.store.repository import Store

MODEL = "acme/follow-1"


def test_an_exclusion_written_by_another_connection_reaches_the_served_list(
    store_url: str,
) -> None:
    settings = Settings(database_url=store_url, models=(ModelSettings(id=MODEL),))
    daemon = Daemon(settings, holder="follow:1")
    try:
        api = TestClient(create_app(settings, daemon.wiring.store, daemon.ignore))
        before = api.get("/v1/ignore-list", params={"model": MODEL})
        assert "gone-host" not in before.json()["ignore"]
        with Store(store_url) as operator:  # the CLI's own connection
            operator.add_exclusion(
                MODEL, "gone-host", "incident 5", "cli:test", None, datetime.now(UTC),
                builtin=(), floor=0,
            )  # fmt: skip
        daemon.housekeeping()
        after = api.get("/v1/ignore-list", params={"model": MODEL})
        assert "gone-host" in after.json()["ignore"]
        assert after.headers["etag"] != before.headers["etag"]
    finally:
        daemon.wiring.store.dispose()
