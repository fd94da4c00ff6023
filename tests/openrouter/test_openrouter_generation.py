"""Who served an answer: the simulator's ``GET /generation?id=`` (a short while after the answer
ended, to the account that made it) and the client's ``generation_provider`` (retried with
backoff within its deadline, never a guess). Clocks and sleeps are the test's own."""

from __future__ import annotations

import asyncio

import httpx

from canary.openrouter.client import OpenRouterClient
from canary.sim.server import start_simulator

MODEL = "acme/gen"
KEY = "sim-key"
SCENARIO = {
    "seed": 3,
    "api_key": KEY,
    "models": [
        {"id": MODEL, "providers": [
            {"tag": "deepinfra/fp8", "name": "DeepInfra", "ttft_ms": 1, "tokens_per_second": 9000},
        ]},
    ],
}  # fmt: skip


def _answer(base_url: str) -> httpx.Response:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}
    return httpx.post(
        f"{base_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
    )


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_an_answer_names_its_provider_and_the_generation_endpoint_confirms_it() -> None:
    with start_simulator(SCENARIO) as sim:
        sim.state.generation_lag_s = 0.0
        answer = _answer(sim.base_url)
        assert answer.json()["provider"] == "DeepInfra"
        gen_id = answer.json()["id"]
        assert answer.headers["x-generation-id"] == gen_id

        async def ask(key: str) -> str | None:
            async with OpenRouterClient(sim.base_url, key) as client:
                return await client.generation_provider(gen_id)

        assert asyncio.run(ask(KEY)) == "DeepInfra"
        assert asyncio.run(ask("another-account")) is None  # 401: never guessed


def test_before_it_is_known_the_client_retries_then_gives_up_at_its_deadline() -> None:
    with start_simulator(SCENARIO) as sim:
        sim.state.generation_lag_s = 3600.0  # never ready within the test
        gen_id = _answer(sim.base_url).json()["id"]
        seen = httpx.get(
            f"{sim.base_url}/generation", params={"id": gen_id},
            headers={"Authorization": f"Bearer {KEY}"},
        )  # fmt: skip
        assert seen.status_code == 404
        fake = FakeTime()

        async def ask() -> str | None:
            async with OpenRouterClient(
                sim.base_url, KEY, clock=fake.clock, sleep=fake.sleep
            ) as client:
                return await client.generation_provider(gen_id, deadline_s=30.0)

        assert asyncio.run(ask()) is None
        assert len(fake.slept) >= 3 and fake.now <= 30.0 + 1e-9
