"""The helper's ``profile=`` (issue 36): sync and async send it and keep its list apart; an app
using it with the official ``openrouter`` SDK against canary's simulator is never served by an
endpoint that misses the profile, unless the document names it withheld for the floor."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_template import migrated_sqlite
from test_ignore_client_live import NOW, Replica

from canary.config.settings import MaxPrice, ProfileSettings
from canary.openrouter.endpoints import parse_endpoints
from canary.sim.server import RunningSimulator
from canary.store.repository import Store
from canary_client import AsyncIgnoreListClient, IgnoreListClient

MODEL = "acme/roleplay-1"


def test_the_helpers_send_the_profile_and_keep_its_list_apart(
    server: Any, clock: Any, tmp_path: Path
) -> None:
    cache = tmp_path / "ignore.json"
    with IgnoreListClient(
        server.base_url, MODEL, profile="chat", cache_path=cache, clock=clock,
        wall_clock=clock.wall,
    ) as client:  # fmt: skip
        assert client.get() == ["bad-host"] and client.profile == "chat"
    plain = IgnoreListClient(server.base_url, MODEL, cache_path=cache, clock=clock)
    assert plain.held is None  # the disk copy is the chat profile's, not the plain list's
    plain.close()

    async def main() -> None:
        client = AsyncIgnoreListClient(
            server.base_url, MODEL, profile="chat", clock=clock, wall_clock=clock.wall
        )
        try:
            assert await client.get() == ["bad-host"]
        finally:
            await client.aclose()

    asyncio.run(main())
    assert [s["profile"] for s in server.behaviour.seen] == ["chat", "chat"]


@pytest.mark.slow  # the simulator's start builds its language detectors: seconds, once a module
@pytest.mark.timeout(120)
def test_an_app_on_a_profile_is_served_only_by_endpoints_that_meet_it(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """canary sim's three hosts, bravo and charlie now above the profile's price ceiling:
    the floor of 2 withholds bravo's entry (the first tag), so the app may reach alpha and
    bravo, never charlie."""
    from openrouter import OpenRouter

    for tag in ("bravo", "charlie"):
        sim.state.apply(
            {"model": MODEL, "provider": tag, "set": {"price": {"prompt": 5.0, "completion": 9}}}
        )
    store = Store(migrated_sqlite(tmp_path / "canary.db"))
    # canary's store holds the listing as a round reads it from the simulator
    listing = httpx.get(f"{sim.base_url}/models/{MODEL}/endpoints").json()
    store.record_snapshots(None, MODEL, parse_endpoints(MODEL, listing), NOW)
    budget = ProfileSettings(name="budget", max_price=MaxPrice(prompt=1.0))
    replica = Replica(store, profiles=(budget,))
    try:
        ignore = IgnoreListClient(replica.base_url, MODEL, profile="budget")
        with OpenRouter(api_key="sk-test", server_url=sim.base_url) as openrouter:
            for _ in range(8):
                reply = openrouter.chat.send(
                    model=MODEL,
                    messages=[{"role": "user", "content": "Hello"}],
                    provider=ignore.provider(),
                )
                assert reply.choices[0].message.content
        ignore.close()
        doc = httpx.get(
            f"{replica.base_url}/v1/ignore-list", params={"model": MODEL, "profile": "budget"}
        ).json()
    finally:
        replica.stop()
        store.dispose()
    served = {r["provider"] for r in sim.state.requests()}
    missing = {e["provider"] for e in doc["entries"] if e["layer"] == "requirement"}
    assert missing == {"charlie"} and doc["withheld"] == ["bravo"]
    assert served and served <= {"alpha", *doc["withheld"]}
    assert not served & missing
