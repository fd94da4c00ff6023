"""A round's heartbeats have threads of their own: a default executor saturated by judging and
store work (thousands of endpoints) never holds a beat back past the claim's TTL."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from canary.config.settings import Settings
from canary.openrouter.client import OpenRouterClient
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring
from canary.store.repository import Store


class BeatsSeen(Store):
    """A real store that tells the event loop each time a round beats."""

    def __init__(self, url: str, loop: asyncio.AbstractEventLoop, beaten: asyncio.Event) -> None:
        super().__init__(url)
        self.loop = loop
        self.beaten = beaten

    def heartbeat_round(self, round_id: int, runner_id: str, at: datetime) -> bool:
        self.loop.call_soon_threadsafe(self.beaten.set)
        return True


async def _forever() -> None:
    await asyncio.Event().wait()


def test_a_round_beats_while_the_default_executor_is_saturated(tmp_path: Path) -> None:
    async def beat_once() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        release = threading.Event()
        busy = loop.run_in_executor(None, release.wait)  # its only thread: taken until released
        beaten = asyncio.Event()
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'c.db'}", lease_ttl_s=0.3, lease_renew_s=0.01
        )
        wiring = build_wiring(settings, store=BeatsSeen(settings.database_url, loop, beaten))
        work = asyncio.create_task(_forever())  # a round in progress
        try:
            async with OpenRouterClient("http://127.0.0.1:9/api/v1", "sk-test") as client:
                beat = asyncio.create_task(RoundRunner(wiring, client)._heartbeat(1, work))
                try:
                    await asyncio.wait_for(beaten.wait(), timeout=10)
                finally:
                    beat.cancel()
        finally:
            work.cancel()
            release.set()
            await busy
            wiring.store.dispose()

    asyncio.run(beat_once())
