"""The dispatcher: limits always hold, a freed slot goes to the busiest provider, re-checks first."""

from __future__ import annotations

import asyncio
import random

import pytest

from canary.rounds.dispatch import Dispatcher, provider_of


class Work:
    """Requests the test finishes by hand: each records when it started."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.peak = 0
        self.peak_by: dict[str, int] = {}
        self.running: dict[str, int] = {}

    def submit(
        self, name: str, provider: str, *, seconds: float = 1.0, urgent: bool = False
    ) -> asyncio.Task[str]:
        self.dispatcher.expect(provider, seconds)
        gate = self.gates[name] = asyncio.Event()

        async def work() -> str:
            self.started.append(name)
            self.running[provider] = self.running.get(provider, 0) + 1
            self.peak = max(self.peak, sum(self.running.values()))
            self.peak_by[provider] = max(self.peak_by.get(provider, 0), self.running[provider])
            await gate.wait()
            self.running[provider] -= 1
            return name

        return asyncio.ensure_future(
            self.dispatcher.run(provider, work, seconds=seconds, urgent=urgent)
        )

    async def finish(self, name: str) -> None:
        self.gates[name].set()
        for _ in range(5):
            await asyncio.sleep(0)  # let the finished request hand its slot on


def test_the_per_provider_limit_applies_to_the_base_slug() -> None:
    assert provider_of("deepinfra/fp8") == provider_of("deepinfra") == "deepinfra"


def test_limits_hold_under_random_completions() -> None:
    async def scenario() -> None:
        rng = random.Random(4)
        work = Work(Dispatcher(concurrency=5, per_provider=2))
        tasks = [
            work.submit(f"r{i}", f"p{rng.randrange(4)}", seconds=rng.uniform(0.5, 3))
            for i in range(60)
        ]
        pending = set(range(60))
        while pending:
            await asyncio.sleep(0)
            running = [i for i in pending if f"r{i}" in work.started]
            assert running, "a slot stayed idle while requests waited"
            chosen = rng.choice(running)
            pending.discard(chosen)
            await work.finish(f"r{chosen}")
        assert [t.result() for t in tasks] == [f"r{i}" for i in range(60)]
        assert work.peak <= 5 and max(work.peak_by.values()) <= 2
        assert work.dispatcher.in_flight == 0 and work.dispatcher.queued == 0

    asyncio.run(scenario())


def test_a_freed_slot_goes_to_the_provider_with_the_most_work_ahead() -> None:
    async def scenario() -> None:
        work = Work(Dispatcher(concurrency=1, per_provider=1))
        work.submit("first", "light", seconds=1)
        await asyncio.sleep(0)
        work.submit("light-2", "light", seconds=1)
        for i in range(3):
            work.submit(f"busy-{i}", "busy", seconds=5)
        await work.finish("first")
        assert work.started == ["first", "busy-0"]  # busy has 15 s ahead, light 1 s
        await work.finish("busy-0")
        assert work.started[-1] == "busy-1"  # still 10 s ahead against 1 s

    asyncio.run(scenario())


def test_a_recheck_goes_before_the_first_looks_of_its_provider() -> None:
    async def scenario() -> None:
        work = Work(Dispatcher(concurrency=4, per_provider=1))
        work.submit("look-1", "p")
        await asyncio.sleep(0)
        work.submit("look-2", "p")
        work.submit("look-3", "p")
        work.submit("recheck", "p", urgent=True)
        await work.finish("look-1")
        assert work.started == ["look-1", "recheck"]

    asyncio.run(scenario())


def test_a_cancelled_waiter_gives_its_place_and_its_work_back() -> None:
    async def scenario() -> None:
        work = Work(Dispatcher(concurrency=1, per_provider=1))
        work.submit("running", "p", seconds=2)
        await asyncio.sleep(0)
        gone = work.submit("gone", "p", seconds=7)
        work.submit("next", "p", seconds=3)
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        assert work.dispatcher.ahead_s("p") == pytest.approx(5)
        await work.finish("running")
        assert work.started == ["running", "next"]
        await work.finish("next")
        assert work.dispatcher.in_flight == 0 and work.dispatcher.ahead_s("p") == 0

    asyncio.run(scenario())


def test_within_a_provider_the_longest_request_starts_first() -> None:
    async def scenario() -> None:
        work = Work(Dispatcher(concurrency=1, per_provider=1))
        work.submit("running", "p", seconds=1)
        await asyncio.sleep(0)
        work.submit("short", "p", seconds=1)
        work.submit("long", "p", seconds=9)
        work.submit("middle", "p", seconds=4)
        for name in ("running", "long", "middle"):
            await work.finish(name)
        assert work.started == ["running", "long", "middle", "short"]

    asyncio.run(scenario())
