"""Benchmark: one real round over 20 models x 15 endpoints (300 endpoints, every contract).

    .venv/bin/python tests/bench/bench_scale.py [--models 20] [--providers 15] [--profile]

`canary sim` runs as a separate process with a generated scenario in which every endpoint
supports every contract (response_format, structured_outputs, tools, tool_choice); this process
runs one RoundRunner round through the real OpenRouterClient and a real SQLite store, as
canary/rounds/drill.py does, with the default settings (concurrency 32, per-provider 4). Printed:

- wall: the round, from RoundRunner.run() to its return (listings, probes, judging, store);
- ideal: the upstream time no client can avoid with this concurrency. For every request the
  simulator's log holds `planned_ms`, when its last token was due after arrival (configured
  ttft + tokens / tokens-per-second). ideal = max(sum of planned / concurrency,
  max over provider slugs of (sum of that slug's planned / per-provider concurrency),
  the longest single request);
- wall / ideal (target <= 1.2);
- CPU per request: time.process_time() of this process over the round, divided by the number
  of requests the simulator logged (target <= 2 ms; includes judging and the store);
- whether the round finished within 2 minutes.

`--rounds N` runs N rounds one after the other (fresh store each), printing each.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sim import SimProcess, load_average, run_loop  # noqa: E402

from canary.config.settings import Settings  # noqa: E402
from canary.core.plan import slot_of  # noqa: E402
from canary.openrouter.client import OpenRouterClient  # noqa: E402
from canary.rounds.drill import drill_settings  # noqa: E402
from canary.rounds.runner import RoundRunner  # noqa: E402
from canary.rounds.wiring import build_wiring  # noqa: E402

KEY = "bench-scale-key"
PARAMETERS = [
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "response_format",
    "structured_outputs",
    "tools",
    "tool_choice",
]


def scenario(models: int, providers: int, ttfts: list[int], speeds: list[int]) -> dict[str, Any]:
    rng = random.Random(11)
    return {
        "seed": 11,
        "models": [
            {
                "id": f"scale/model-{m}",
                "providers": [
                    {
                        "tag": f"host{p}" if p % 3 else f"host{p}/fp8",
                        "name": f"Host {p}",
                        "quantization": "fp8" if p % 3 == 0 else "bf16",
                        "price": {"prompt": 0.1 + p / 100, "completion": 0.3 + p / 50},
                        "context_length": 32768,
                        "supported_parameters": PARAMETERS,
                        "ttft_ms": rng.choice(ttfts),
                        "tokens_per_second": rng.choice(speeds),
                    }
                    for p in range(providers)
                ],
            }
            for m in range(models)
        ],
    }


def ideal_of(log: list[dict[str, Any]], concurrency: int, per_provider: int) -> dict[str, float]:
    planned = [e["planned_ms"] / 1000 for e in log if e.get("planned_ms") is not None]
    by_slug: dict[str, float] = defaultdict(float)
    for e in log:
        if e.get("planned_ms") is not None:
            by_slug[str(e["provider"]).split("/", 1)[0]] += e["planned_ms"] / 1000
    parts = {
        "sum/concurrency": sum(planned) / concurrency,
        "busiest provider/per-provider": max(by_slug.values(), default=0.0) / per_provider,
        "longest request": max(planned, default=0.0),
    }
    return parts


async def one_round(sim: SimProcess, spec: dict[str, Any], profile: bool, k: int) -> None:
    model_ids = [m["id"] for m in spec["models"]]
    with tempfile.TemporaryDirectory(prefix="canary-bench-") as folder:
        settings = drill_settings(
            Settings(),
            model_ids,
            base_url=sim.base_url,
            database_url=f"sqlite:///{Path(folder) / 'bench.db'}",
            mode=None,
            interval_minutes=None,
        )
        wiring = build_wiring(settings)
        wiring.analyze("The knight walks into the dark tavern and orders a drink.", "en")
        o = settings.openrouter
        now = datetime(2026, 1, 5, tzinfo=UTC) + timedelta(minutes=settings.interval_minutes * k)
        try:
            async with OpenRouterClient(
                o.base_url,
                KEY,
                connect_timeout_s=o.connect_timeout_s,
                first_token_timeout_s=o.first_token_timeout_s,
                stream_timeout_s=o.stream_timeout_s,
                listing_deadline_s=o.listing_deadline_s,
                max_connections=max(settings.concurrency, 8),
            ) as client:
                runner = RoundRunner(wiring, client, clock=lambda: now)
                slot = slot_of(now, settings.interval_minutes)
                sim.clear_requests()
                profiler = cProfile.Profile(time.process_time) if profile else None
                cpu, wall, user = time.process_time(), time.perf_counter(), os.times().user
                if profiler:
                    profiler.enable()
                reports = await runner.run(scheduled_at=slot)
                if profiler:
                    profiler.disable()
                wall = time.perf_counter() - wall
                cpu = time.process_time() - cpu
                user = os.times().user - user
        finally:
            wiring.store.dispose()
    log = sim.requests()
    chats = [e for e in log if "attempts" in e]
    ok = sum(1 for r in reports for p in r.probings for ob in p.observations if ob.completed)
    probes = sum(len(p.observations) for r in reports for p in r.probings)
    verdicts: dict[str, int] = defaultdict(int)
    for r in reports:
        for v in r.verdicts.values():
            verdicts[v.verdict.value] += 1
    parts = ideal_of(chats, settings.concurrency, settings.per_provider_concurrency)
    ideal = max(parts.values())
    how = f"round {k}: RoundRunner.run"
    endpoints = sum(len(r.probings) for r in reports)
    print(f"== {how}: {len(reports)} models, {endpoints} endpoints, {len(chats)} requests "
          f"({probes} probes, {ok} completed), verdicts {dict(verdicts)}")  # fmt: skip
    print(f"  concurrency {settings.concurrency}, "
          f"per-provider {settings.per_provider_concurrency}, max_tokens {o.max_tokens}, "
          f"ttft_samples {settings.ttft_samples}")  # fmt: skip
    print("  ideal = max(" + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()) + ")")
    print(f"  wall {wall:7.2f} s   ideal {ideal:7.2f} s   wall/ideal {wall / ideal:5.2f} "
          f"(target <= 1.2)")  # fmt: skip
    per = cpu / max(1, len(chats)) * 1000
    print(
        f"  CPU {cpu:6.2f} s ({user:.2f} s user, the rest system) = {per:5.2f} ms per request "
        "(target <= 2 ms, judging included)"
    )
    print(f"  finished within 2 minutes: {'yes' if wall < 120 else 'NO'}")
    print(f"  load average: {load_average()}")
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--providers", type=int, default=15)
    parser.add_argument("--ttft-ms", default="300,500,800,1200", help="choices, comma-separated")
    parser.add_argument("--tps", default="80,120,200", help="tokens/s choices, comma-separated")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the round")
    args = parser.parse_args()
    ttfts = [int(x) for x in args.ttft_ms.split(",")]
    speeds = [int(x) for x in args.tps.split(",")]
    spec = scenario(args.models, args.providers, ttfts, speeds)
    with SimProcess(spec) as sim:
        for k in range(1, args.rounds + 1):
            run_loop(one_round(sim, spec, args.profile, k))


if __name__ == "__main__":
    main()
