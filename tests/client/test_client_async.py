"""The async helper (the rules are the sync one's, tested there) and the background refresh of
both: no request of the app waits on canary, even when canary accepts and never answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from canary_client import AsyncIgnoreListClient, IgnoreListClient, IgnoreListUnavailable

MODEL = "acme/roleplay-1"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def make(server: Any, clock: Any, **kw: Any) -> AsyncIgnoreListClient:
    return AsyncIgnoreListClient(server.base_url, MODEL, clock=clock, wall_clock=clock.wall, **kw)


def seed_cache(server: Any, clock: Any, cache: Path) -> None:
    """A list on disk, as a previous run of the app left it."""
    with IgnoreListClient(
        server.base_url, MODEL, cache_path=cache, clock=clock, wall_clock=clock.wall
    ) as client:
        assert client.get() == ["bad-host"]


async def wait_for_request(server: Any) -> None:
    """Until the server has received a request (set by its handler thread)."""
    assert await asyncio.to_thread(server.behaviour.received.wait, 10)
    server.behaviour.received.clear()


def test_get_fetches_revalidates_and_keeps_the_list_on_errors(server: Any, clock: Any) -> None:
    async def main() -> None:
        client = make(server, clock, retry_after_error_s=5)
        try:
            assert await client.get() == ["bad-host"]
            assert await client.provider() == {"ignore": ["bad-host"]}  # a 304
            server.behaviour.mode, server.behaviour.ignore = "garbage", []
            clock.now += 60
            assert await client.get() == ["bad-host"]
            assert client.stale is True and "not JSON" in (client.last_error or "")
        finally:
            await client.aclose()

    asyncio.run(main())
    assert [s["if_none_match"] is not None for s in server.behaviour.seen] == [False, True, True]


def test_nothing_held_and_canary_down_raises(server: Any, clock: Any) -> None:
    server.stop()

    async def main() -> None:
        async with make(server, clock, background=True) as client:
            with pytest.raises(IgnoreListUnavailable, match="ConnectError"):
                await client.get()

    asyncio.run(main())


def test_an_asyncio_app_answers_at_once_while_canary_hangs(
    server: Any, clock: Any, tmp_path: Path
) -> None:
    """The app answers its own requests from the list held while the background refresh waits
    on a canary that accepted the connection and never answers."""
    cache = tmp_path / "ignore.json"
    seed_cache(server, clock, cache)
    server.behaviour.mode = "hang"
    server.behaviour.received.clear()

    async def main() -> None:
        ignore = AsyncIgnoreListClient(
            server.base_url, MODEL, cache_path=cache, background=True, timeout_s=60,
            clock=clock, wall_clock=clock.wall,
        )  # fmt: skip

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            body = json.dumps(await ignore.provider()).encode()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})

        async with ignore:
            await wait_for_request(server)  # the refresh is on the wire, and hangs
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://app") as users:
                answers = await asyncio.gather(*(users.get("/chat") for _ in range(20)))
            # The hanging canary answers nothing until the test stops it: a request that waited
            # for the refresh would still be waiting (its 60 s is past the test's timeout).
            assert [a.json() for a in answers] == [{"ignore": ["bad-host"]}] * 20
            assert not server.behaviour.release.is_set()  # canary still has not answered

    asyncio.run(main())


def test_the_background_refresh_follows_changes(server: Any, clock: Any) -> None:
    server.behaviour.received.clear()

    async def main() -> None:
        async with make(server, clock, background=True, poll_every_s=0.01) as client:
            assert await client.get() == ["bad-host"]  # start() waited for the first list
            server.behaviour.ignore = ["bad-host", "new-bad"]
            server.behaviour.received.clear()
            await wait_for_request(server)  # received after the change: it answers the new list
            await wait_for_request(server)  # the answer to the one before is taken by now
            assert await client.get() == ["bad-host", "new-bad"]

    asyncio.run(main())


def test_a_threaded_app_with_background_refresh_never_waits(
    server: Any, clock: Any, tmp_path: Path
) -> None:
    cache = tmp_path / "ignore.json"
    seed_cache(server, clock, cache)
    server.behaviour.mode = "hang"
    server.behaviour.received.clear()
    client = IgnoreListClient(
        server.base_url, MODEL, cache_path=cache, background=True, timeout_s=60, clock=clock,
        wall_clock=clock.wall,
    )  # fmt: skip
    try:
        assert server.behaviour.received.wait(10)  # the thread's refresh hangs
        # answered while the refresh still hangs (it answers only once the server stops)
        assert [client.get() for _ in range(100)] == [["bad-host"]] * 100
        assert not server.behaviour.release.is_set()
    finally:
        server.stop()  # releases the hanging request, so close() can join the thread
        client.close()
