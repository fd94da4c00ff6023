"""IgnoreListClient against canary's own API: the real ASGI app over uvicorn, a SQLite store."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from canary.client import IgnoreListClient, IgnoreListUnavailable

MODEL = "acme/roleplay-1"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class Live:
    def __init__(self, tmp_path: Path) -> None:
        import uvicorn

        from canary.api.app import create_app
        from canary.ignorelist import IgnoreListService
        from canary.settings import ModelSettings, Settings
        from canary.store.repository import Store

        self.db = tmp_path / "canary.db"
        url = f"sqlite:///{self.db}"
        self.store = Store(url)
        self.store.upgrade()
        self.store.add_exclusion(
            MODEL, "bad-host", "stray tokens", "test", None, NOW, builtin=(), floor=0
        )
        self.service = IgnoreListService(self.store, (), [MODEL], "p-test", clock=lambda: NOW)
        assert self.service.refresh()
        settings = Settings(database_url=url, models=(ModelSettings(id=MODEL),))
        app = create_app(settings, self.store, self.service, clock=lambda: NOW)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)  # requests queue here until uvicorn accepts: no start-up wait needed
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none", http="h11")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.store.dispose()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    server = Live(tmp_path)
    yield server
    server.stop()


def test_reads_canarys_list_and_revalidates_with_its_etag(live: Live, clock: Any) -> None:
    with IgnoreListClient(live.base_url, MODEL, clock=clock) as client:
        assert client.provider() == {"ignore": ["bad-host"]}
        clock.now += 60  # past the server's max-age: revalidate
        assert client.get() == ["bad-host"]
        assert client.last_error is None and client.stale is False


def test_keeps_the_list_when_canarys_store_goes_away(
    live: Live, clock: Any, tmp_path: Path
) -> None:
    cache = tmp_path / "cache" / "ignore.json"
    with IgnoreListClient(live.base_url, MODEL, cache_path=cache, clock=clock) as client:
        assert client.get() == ["bad-host"]
        live.store.dispose()
        live.db.unlink()  # the store loses its tables: the server fails static
        assert not live.service.refresh()
        clock.now += 60
        assert client.get() == ["bad-host"]
        assert client.stale is True  # the server said "stale": true
    live.stop()  # canary is gone altogether: a restarted app still has the list from disk
    with IgnoreListClient(live.base_url, MODEL, cache_path=cache, clock=clock) as restarted:
        assert restarted.get() == ["bad-host"]
        assert restarted.last_error is not None


def test_an_unknown_model_is_no_list(live: Live, clock: Any) -> None:
    with IgnoreListClient(live.base_url, "other/model", clock=clock) as client:
        with pytest.raises(IgnoreListUnavailable, match="HTTP 404"):
            client.get()


def test_an_app_that_states_its_needs_gets_the_list_cut_for_them(
    live: Live, clock: Any, tmp_path: Path
) -> None:
    from canary.core.model import Contract, EndpointState, Streak
    from canary.core.quarantine import QuarantineStart

    until = NOW + timedelta(days=1)
    state = EndpointState(
        MODEL, "schema-host", streaks=(Streak(Contract.schema, 2, NOW, (1, 2)),),
        quarantined_since=NOW, quarantined_until=until, causes=("schema",), ladder_step=1,
    )  # fmt: skip
    start = QuarantineStart(MODEL, "schema-host", NOW, until, 1, "schema", (1, 2), ("schema",))
    assert live.store.apply_decision(
        round_id=None, model=MODEL, before={}, after={"schema-host": state}, events=[],
        quarantines_started=[start], actor="canary", policy_version="p-test", at=NOW,
    )  # fmt: skip
    assert live.service.refresh()
    cache = tmp_path / "ignore.json"
    with IgnoreListClient(live.base_url, MODEL, clock=clock, needs=["tools"]) as tools:
        assert tools.get() == ["bad-host"]
    with IgnoreListClient(live.base_url, MODEL, clock=clock, cache_path=cache) as full:
        assert full.get() == ["bad-host", "schema-host"]
    with IgnoreListClient(
        live.base_url, MODEL, clock=clock, cache_path=cache, needs=["tools"]
    ) as other:  # a cache written for the full list is not a list cut for other needs
        live.stop()
        with pytest.raises(IgnoreListUnavailable):
            other.get()
