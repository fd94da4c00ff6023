"""Reports on the virtual clock (issue 35), enforce mode, the real stack: the in-process
simulator, the real client, rounds (RoundRunner) and focused checks (FocusedChecks) on one
SQLite store.

- `exclusion`: a persistent defect (broken JSON on one of four endpoints) starts at a random
  moment of a slot; with reports, an app reports it at its first bad answer (within a minute of
  the onset). Time from the onset to the endpoint's quarantine (its removal from the published
  list), with reports and without, over ``--trials`` onsets. Rounds run at every slot
  (``interval_minutes`` 30); the daemon's focused tick runs every 15 s, and is run here at the
  ticks that have work (the first after a report, the first a look gap after a focused check):
  the others find nothing to claim.
- `healthy`: ``--reports`` reports, every symptom in turn, against the four healthy endpoints,
  spread over ``--hours``, with the rounds and the ticks every 15 s between: quarantines (target
  0), focused checks and the probes they cost.

    .venv/bin/python tests/bench/bench_reports.py [--trials 20] [--reports 1000] [--hours 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from canary.config.settings import ModelSettings, Settings
from canary.core.reports import Symptom
from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import DRILL_START, SIM_KEY
from canary.rounds.focused import FocusedChecks
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring
from canary.service.logs import configure_logging
from canary.service.reports import Said, TooManyReports, take_report
from canary.sim.server import start_simulator
from canary.store.repository import Store

INTERVAL = timedelta(minutes=30)
TICK = timedelta(seconds=15)
TAGS = ("alpha", "bravo", "charlie", "delta")
FAST = {"ttft_ms": 5, "tokens_per_second": 50000}


def _settings(url: str, base_url: str, models: list[str]) -> Settings:
    base = Settings(
        database_url=url,
        mode="enforce",
        languages=("en", "es"),
        models=tuple(ModelSettings(id=m) for m in models),
    )
    return base.replace(openrouter=base.openrouter.replace(base_url=base_url, api_key=SIM_KEY))


def _next_tick(at: datetime) -> datetime:
    seconds = (at - DRILL_START).total_seconds()
    return DRILL_START + TICK * (int(seconds // TICK.total_seconds()) + 1)


async def _exclusion(trials: int, seed: int, url: str) -> dict[str, list[float]]:
    rng = random.Random(seed)
    models = [f"acme/onset-{i}" for i in range(2 * trials)]
    scenario = {"seed": seed, "models": [
        {"id": m, "providers": [{"tag": t, **FAST} for t in TAGS]} for m in models
    ]}  # fmt: skip
    minutes: dict[str, list[float]] = {"with reports": [], "without": []}
    with start_simulator(scenario) as sim:
        settings = _settings(url, sim.base_url, models)
        sim.state.generation_lag_s = 0.0
        async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
            for i, model in enumerate(models):
                reports = i % 2 == 0
                wiring = build_wiring(settings.replace(models=(ModelSettings(id=model),)))
                onset = DRILL_START + rng.uniform(0, INTERVAL.total_seconds()) * timedelta(
                    seconds=1
                )
                seen = onset + timedelta(seconds=rng.uniform(0, 60))  # the app's first bad answer
                rounds = [DRILL_START + k * INTERVAL for k in range(6)]
                ticks = [_next_tick(seen)] if reports else []
                broken, reported, done = False, False, None
                while done is None:
                    at = min([*rounds, *ticks])
                    if not broken and onset <= at:
                        sim.state.set_faults(model, "delta", [{"kind": "schema_break"}])
                        broken = True
                    if reports and not reported and seen <= at:
                        said = Said(model, "broken_json", provider="delta")
                        take_report(wiring.store, wiring.settings, said, "bench", seen)
                        reported = True
                    clock = lambda at=at: at  # noqa: E731
                    if at in rounds:
                        rounds.remove(at)
                        runs = await RoundRunner(wiring, client, clock=clock).run()
                    else:
                        ticks.remove(at)
                        runs = await FocusedChecks(wiring, client, clock=clock).tick()
                        if runs:  # the second look is due a gap after this one
                            ticks.append(_next_tick(at + wiring.rules.min_look_gap - TICK))
                    if any(e.kind.value == "quarantine" for r in runs for e in r.events):
                        done = at
                key = "with reports" if reports else "without"
                minutes[key].append((done - onset).total_seconds() / 60)
                wiring.store.dispose()
    return minutes


async def _healthy(count: int, hours: float, seed: int, url: str) -> dict[str, int]:
    rng = random.Random(seed)
    model = "acme/healthy-1"
    scenario = {"seed": seed, "models": [
        {"id": model, "providers": [{"tag": t, **FAST} for t in TAGS]}
    ]}  # fmt: skip
    symptoms = list(Symptom)
    span = timedelta(hours=hours)
    times = sorted(DRILL_START + rng.uniform(0, 1) * span for _ in range(count))
    figures = {"reports": 0, "refused": 0, "checks": 0, "probes": 0, "quarantines": 0}
    with start_simulator(scenario) as sim:
        wiring = build_wiring(_settings(url, sim.base_url, [model]))
        async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
            at, k = DRILL_START, 0
            while at <= DRILL_START + span:
                clock = lambda at=at: at  # noqa: E731
                while times and times[0] <= at:
                    said = Said(model, symptoms[k % len(symptoms)].value,
                                provider=TAGS[k % len(TAGS)])  # fmt: skip
                    k += 1
                    try:
                        take_report(wiring.store, wiring.settings, said, "bench", times.pop(0))
                        figures["reports"] += 1
                    except TooManyReports:
                        figures["refused"] += 1
                runs = []
                if (at - DRILL_START) % INTERVAL == timedelta():
                    runs += await RoundRunner(wiring, client, clock=clock).run()
                checks = await FocusedChecks(wiring, client, clock=clock).tick()
                figures["checks"] += len(checks)
                figures["probes"] += sum(len(p.observations) for c in checks for p in c.probings)
                runs += checks
                figures["quarantines"] += sum(
                    e.kind.value == "quarantine" for r in runs for e in r.events
                )
                at += TICK
        wiring.store.dispose()
    return figures


def _store(folder: str, name: str) -> str:
    url = f"sqlite:///{Path(folder) / name}"
    with Store(url) as store:
        store.upgrade()
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="onsets, with and without")
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    configure_logging(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        started = time.process_time()
        exclusion = asyncio.run(_exclusion(args.trials, args.seed, _store(folder, "a.db")))
        for key, values in exclusion.items():
            q = statistics.quantiles(values, n=10)
            print(f"time to exclusion {key}: median {statistics.median(values):.1f} min, "
                  f"p90 {q[8]:.1f} min, max {max(values):.1f} min (n={len(values)})")  # fmt: skip
        healthy = asyncio.run(_healthy(args.reports, args.hours, args.seed, _store(folder, "b.db")))
        print(
            f"{healthy['reports']} reports against healthy endpoints over {args.hours:g} h "
            f"({healthy['refused']} refused by the token's rate limit): "
            f"{healthy['quarantines']} quarantines, {healthy['checks']} focused checks, "
            f"{healthy['probes']} probes"
        )
        print(f"CPU {time.process_time() - started:.1f} s")


if __name__ == "__main__":
    main()
