"""Benchmark: how exactly the client measures time to first token, at 64 concurrent streams.

    .venv/bin/python tests/bench/bench_ttft_accuracy.py [--streams 64] [--rounds 5]

`canary sim` runs as a separate process (20 models x 15 providers). Each round sends `--streams`
concurrent pinned probes through one OpenRouterClient, each to a different endpoint, so every
request can be matched with its line in the simulator's request log (`GET /_sim/requests`).
The simulator stamps `first_token_s` (time.perf_counter(), the system-wide monotonic clock on
Linux, shared by both processes) just before it writes the first token. The client is given a
clock that also notes, per task, when the request headers went on the wire (`sent`, the origin
of the client's ttft). For each request:

    error = | client ttft  -  (server first_token_s - client sent) |

i.e. how far the client's figure is from the true time between sending the request and the
server sending the first token (loopback transit included, which is tens of microseconds).
Printed: p50/p95/p99/max of the error (target p99 <= 25 ms), and of the signed difference.
Streams run at 150-300 tokens/s with ttfts spread over 200-1200 ms, so first tokens arrive while
other streams are being read and parsed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sim import SimProcess, load_average, percentiles, run_loop  # noqa: E402

from canary.core.model import Contract, Endpoint, Pricing, Transport  # noqa: E402
from canary.openrouter.client import OpenRouterClient  # noqa: E402

PROMPTS = [
    "Continue the scene in the tavern, please. The knight walks in, soaked by the rain.",
    "Continúa la escena: el caballero entra en la taberna, empapado por la lluvia.",
    "Continuez la scène : le chevalier entre dans la taverne, trempé par la pluie.",
    "Setze die Szene fort: Der Ritter betritt die Taverne, durchnässt vom Regen.",
]


def scenario(models: int, providers: int) -> dict[str, Any]:
    rng = random.Random(5)
    return {
        "seed": 5,
        "models": [
            {
                "id": f"ttft/model-{m}",
                "providers": [
                    {
                        "tag": f"host{p}",
                        "name": f"Host {p}",
                        "quantization": "fp8",
                        "price": {"prompt": 0.1, "completion": 0.3},
                        "ttft_ms": rng.randrange(200, 1200),
                        "tokens_per_second": rng.choice([150, 200, 300]),
                    }
                    for p in range(providers)
                ],
            }
            for m in range(models)
        ],
    }


class LoopLag:
    """How late a 1 ms timer fires: the time this event loop (or this process) was busy."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.running = True

    async def run(self) -> None:
        while self.running:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags.append(max(0.0, time.perf_counter() - before - 0.001) * 1000)


class TaskClock:
    """time.perf_counter, noting each task's readings: the client reads it when a probe starts
    and when its request headers go out (then for every event)."""

    def __init__(self) -> None:
        self.readings: dict[int, list[float]] = defaultdict(list)

    def __call__(self) -> float:
        now = time.perf_counter()
        task = asyncio.current_task()
        if task is not None:
            readings = self.readings[id(task)]
            if len(readings) < 2:
                readings.append(now)
        return now


async def one_probe(
    client: OpenRouterClient, clock: TaskClock, endpoint: Endpoint, prompt: str
) -> tuple[Endpoint, float | None, float | None, Transport]:
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 400}
    observation = await client.probe(endpoint, body, contract=Contract.ttft)
    task = asyncio.current_task()
    readings = clock.readings.pop(id(task), [])
    sent = readings[1] if len(readings) > 1 else None
    return endpoint, sent, observation.ttft_s, observation.transport


async def run(sim: SimProcess, spec: dict[str, Any], args: argparse.Namespace) -> None:
    endpoints = [
        Endpoint(model=m["id"], tag=p["tag"], provider_name=p["name"], pricing=Pricing(0.1, 0.3))
        for m in spec["models"]
        for p in m["providers"]
    ]
    rng = random.Random(9)
    clock = TaskClock()
    errors: list[float] = []
    signed: list[float] = []
    failed = 0
    async with OpenRouterClient(
        sim.base_url, "bench", clock=clock, max_connections=max(64, args.streams)
    ) as client:
        # warm the pool: the figures are about streaming, not about TCP handshakes
        await asyncio.gather(
            *(one_probe(client, clock, e, PROMPTS[0]) for e in endpoints[: args.streams])
        )
        lag = LoopLag()
        cpu = user = 0.0
        for _ in range(args.rounds):
            sim.clear_requests()
            picks = rng.sample(endpoints, args.streams)
            lag.running = True
            ticker = asyncio.ensure_future(lag.run())
            started, user_started = time.process_time(), os.times().user
            results = await asyncio.gather(
                *(
                    one_probe(client, clock, e, PROMPTS[i % len(PROMPTS)])
                    for i, e in enumerate(picks)
                )
            )
            cpu += time.process_time() - started
            user += os.times().user - user_started
            lag.running = False
            await ticker
            log = {(e["model"], e.get("provider")): e for e in sim.requests() if "attempts" in e}
            for endpoint, sent, ttft, transport in results:
                entry = log.get((endpoint.model, endpoint.tag))
                if (
                    transport is not Transport.ok
                    or sent is None
                    or ttft is None
                    or entry is None
                    or entry.get("first_token_s") is None
                ):
                    failed += 1
                    continue
                true_ttft = entry["first_token_s"] - sent
                signed.append((ttft - true_ttft) * 1000)
                errors.append(abs(ttft - true_ttft) * 1000)
    print(
        f"streams at once: {args.streams}   rounds: {args.rounds}   matched: {len(errors)}   "
        f"unmatched or failed: {failed}"
    )
    n = args.rounds * args.streams
    print(
        f"client CPU per probe: {cpu / n * 1000:.2f} ms ({user / n * 1000:.2f} ms user, the rest "
        "system), the 1 ms ticker below included"
    )
    if lag.lags:
        print(f"event-loop lag (a 1 ms timer firing late):            {percentiles(lag.lags)}")
    if errors:
        print(f"|client ttft - server (first token sent - request sent)|: {percentiles(errors)}")
        print(f"  signed (client - server):                              {percentiles(signed)}")
        p99 = sorted(errors)[int(0.99 * (len(errors) - 1))]
        print(f"target p99 <= 25 ms: {'met' if p99 <= 25 else 'MISSED'}")
    print(f"load average: {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spec = scenario(20, 15)
    with SimProcess(spec) as sim:
        run_loop(run(sim, spec, args))


if __name__ == "__main__":
    main()
