"""IgnoreListClient against canary's own API: the real ASGI app over uvicorn, a SQLite store."""

from __future__ import annotations

import itertools
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_template import migrated_sqlite

from canary.client import IgnoreListClient, IgnoreListUnavailable

MODEL = "acme/roleplay-1"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class Replica:
    """One canary replica on a shared store: its own list service, clock and uvicorn server."""

    def __init__(
        self, store: Any, clock: Callable[[], datetime] = lambda: NOW, profiles: Any = ()
    ) -> None:
        import uvicorn

        from canary.api.app import create_app
        from canary.config.settings import ModelSettings, Settings
        from canary.service.ignore_list import IgnoreListService

        settings = Settings(
            database_url=store.url, models=(ModelSettings(id=MODEL),), profiles=profiles
        )
        self.service = IgnoreListService(
            store, (), [MODEL], "p-test", clock=clock, profiles=settings.profile_rules
        )
        assert self.service.refresh()
        app = create_app(settings, store, self.service, clock=clock)
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


class Live(Replica):
    """One replica on a SQLite store of its own, holding one runtime exclusion."""

    def __init__(self, tmp_path: Path) -> None:
        from canary.store.repository import Store

        self.db = tmp_path / "canary.db"
        self.store = Store(migrated_sqlite(self.db))
        self.store.add_exclusion(
            MODEL, "bad-host", "stray tokens", "test", None, NOW, builtin=(), floor=0
        )
        super().__init__(self.store)

    def stop(self) -> None:
        super().stop()
        self.store.dispose()


class ServerClock:
    """A replica's clock, moved by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Balancer(httpx.BaseTransport):
    """A round-robin load balancer in front of real replicas: each request goes to the next
    one; it records the status of every answer."""

    def __init__(self, replicas: list[Replica]) -> None:
        self._targets = itertools.cycle([httpx.URL(r.base_url) for r in replicas])
        self._http = httpx.HTTPTransport()
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = next(self._targets)
        request.url = request.url.copy_with(host=target.host, port=target.port)
        response = self._http.handle_request(request)
        self.statuses.append(response.status_code)
        return response

    def close(self) -> None:
        self._http.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    server = Live(tmp_path)
    yield server
    server.stop()


def test_reads_canarys_list_and_revalidates_with_its_etag(live: Live, clock: Any) -> None:
    with IgnoreListClient(live.base_url, MODEL, clock=clock, wall_clock=clock.wall) as client:
        assert client.provider() == {"ignore": ["bad-host"]}
        assert client.floor_breached is False
        assert client.usable_endpoints is None  # canary has not listed the model's endpoints yet
        assert client.held is not None and client.held.entries[0].layer == "runtime"
        clock.now += 60  # past the server's max-age: revalidate
        assert client.get() == ["bad-host"]
        assert client.last_error is None and client.stale is False


def test_keeps_the_list_when_canarys_store_goes_away(
    live: Live, clock: Any, tmp_path: Path
) -> None:
    cache = tmp_path / "cache" / "ignore.json"
    with IgnoreListClient(
        live.base_url, MODEL, cache_path=cache, clock=clock, wall_clock=clock.wall
    ) as client:
        assert client.get() == ["bad-host"]
        live.store.dispose()
        live.db.unlink()  # the store loses its tables: the server fails static
        assert not live.service.refresh()
        clock.now += 60
        assert client.get() == ["bad-host"]
        assert client.stale is True  # the server said "stale": true
    live.stop()  # canary is gone altogether: a restarted app still has the list from disk
    with IgnoreListClient(
        live.base_url, MODEL, cache_path=cache, clock=clock, wall_clock=clock.wall
    ) as restarted:
        assert restarted.get() == ["bad-host"]
        assert restarted.last_error is not None


def test_an_unknown_model_is_no_list(live: Live, clock: Any) -> None:
    with IgnoreListClient(
        live.base_url, "other/model", clock=clock, wall_clock=clock.wall
    ) as client:
        with pytest.raises(IgnoreListUnavailable, match="HTTP 404"):
            client.get()


def test_an_app_that_states_its_needs_gets_the_list_cut_for_them(
    live: Live, clock: Any, tmp_path: Path
) -> None:
    from canary.core.model import Contract, EndpointState, Look, Streak
    from canary.core.quarantine import QuarantineStart

    until = NOW + timedelta(days=1)
    looks = (Look.round(1, NOW - timedelta(minutes=30)), Look.round(2, NOW))
    state = EndpointState(
        MODEL, "schema-host", streaks=(Streak(Contract.schema, 2, NOW, looks),),
        quarantined_since=NOW, quarantined_until=until, causes=("schema",), ladder_step=1,
    )  # fmt: skip
    start = QuarantineStart(MODEL, "schema-host", NOW, until, 1, "schema", looks, ("schema",))
    assert live.store.apply_decision(
        round_id=None, model=MODEL, before={}, after={"schema-host": state}, events=[],
        quarantines_started=[start], actor="canary", policy_version="p-test", at=NOW,
    )  # fmt: skip
    assert live.service.refresh()
    cache = tmp_path / "ignore.json"
    with IgnoreListClient(
        live.base_url, MODEL, clock=clock, wall_clock=clock.wall, needs=["tools"]
    ) as tools:
        assert tools.get() == ["bad-host"]
    with IgnoreListClient(
        live.base_url, MODEL, clock=clock, wall_clock=clock.wall, cache_path=cache
    ) as full:
        assert full.get() == ["bad-host", "schema-host"]
    with IgnoreListClient(
        live.base_url, MODEL, clock=clock, wall_clock=clock.wall, cache_path=cache, needs=["tools"]
    ) as other:  # a cache written for the full list is not a list cut for other needs
        live.stop()
        with pytest.raises(IgnoreListUnavailable):
            other.get()


def test_revalidating_against_two_replicas_across_housekeeping_gets_304s(
    live: Live, clock: Any
) -> None:
    """Two replicas built their lists at different times and rebuild them every 15 s: while the
    list is the same, every revalidation after the first answer is a 304, whichever replica
    answers; a change to the list is a 200 with the new list."""
    early, late = ServerClock(NOW + timedelta(seconds=3)), ServerClock(NOW + timedelta(seconds=11))
    replicas = [Replica(live.store, early), Replica(live.store, late)]
    balancer = Balancer(replicas)
    try:
        with IgnoreListClient(
            "http://canary.internal", MODEL, clock=clock, wall_clock=clock.wall, transport=balancer
        ) as c:
            assert c.get() == ["bad-host"]
            for _ in range(4):
                clock.now += 20  # past the server's max-age: the client revalidates
                for replica, server_clock in zip(replicas, (early, late), strict=True):
                    server_clock.now += timedelta(seconds=20)  # housekeeping: a rebuild
                    assert replica.service.refresh()
                assert c.get() == ["bad-host"]
            assert balancer.statuses == [200, 304, 304, 304, 304]
            live.store.add_exclusion(
                MODEL, "worse-host", "timeouts", "test", None, NOW, builtin=(), floor=0
            )
            for replica in replicas:
                assert replica.service.refresh()
            clock.now += 20
            assert c.get() == ["bad-host", "worse-host"]
            assert balancer.statuses[-1] == 200
    finally:
        for replica in replicas:
            replica.stop()
