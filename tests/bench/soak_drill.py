"""Soak: a healthy fleet with realistic noise must never be quarantined.

Two fleets, each of real drill rounds (the in-process simulator, the real client, a fresh
SQLite store, lingua over every supported language) in enforce mode; the script prints how many
quarantines and would-quarantines that produced (target: zero), what the noise looked like, and
the time taken.

- `noisy`: four endpoints of one model; three of them answer 20 % of requests with a transport
  error (503, 429 or 502), and every endpoint gives a rare single slow answer
  (`slow_first_token` at rate 0.02, above a 0.5 s threshold).
- `sporadic` (issue 13): six endpoints, each with every defect in small doses: 503 10 %, a slow
  first token 3 %, broken JSON 1 %, a stray prefix 2 %, light mixing (a third of the sentences
  in another language) 1 %, a disconnect 2 %.

    .venv/bin/python tests/bench/soak_drill.py [--fleet noisy|sporadic] [--rounds 1000]
        [--mode enforce|observe]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections import Counter
from typing import Any

from canary.config.settings import SUPPORTED_LANGUAGES, ModelSettings, Settings
from canary.rounds.drill import run_drill
from canary.service.logs import configure_logging

MODEL = "acme/soak-1"
TTFT_THRESHOLD_S = 0.5
SLOW_MS = 900  # a slow answer: well above the threshold
TRANSPORT = [  # 20 % transport errors, spread over three providers
    {"kind": "http_error", "status": 503, "rate": 0.2},
    {"kind": "http_error", "status": 429, "rate": 0.2, "retry_after": 1},
    {"kind": "http_error", "status": 502, "rate": 0.2},
]
RARE_SLOW = {"kind": "slow_first_token", "ttft_ms": SLOW_MS, "rate": 0.02}


SPORADIC = [
    {"kind": "http_error", "status": 503, "rate": 0.10},
    {"kind": "slow_first_token", "ttft_ms": SLOW_MS, "rate": 0.03},
    {"kind": "schema_break", "how": "invalid_json", "rate": 0.01},
    {"kind": "garbage_prefix", "rate": 0.02},
    {"kind": "language_mix", "with": "es", "share": 0.34, "rate": 0.01},
    {"kind": "disconnect", "rate": 0.02},
]


def sporadic_fleet(seed: int) -> dict[str, Any]:
    providers = [
        {"tag": tag, "ttft_ms": 20, "jitter_ms": 30, "tokens_per_second": 50000, "faults": SPORADIC}
        for tag in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
    ]
    return {"seed": seed, "models": [{"id": MODEL, "providers": providers}]}


def noisy_fleet(seed: int) -> dict[str, Any]:
    providers = []
    for i, tag in enumerate(("alpha", "bravo", "charlie", "delta")):
        faults = [RARE_SLOW] + ([TRANSPORT[i]] if i < len(TRANSPORT) else [])
        providers.append(
            {
                "tag": tag,
                "ttft_ms": 20,
                "jitter_ms": 30,
                "tokens_per_second": 50000,
                "faults": faults,
            }
        )
    return {"seed": seed, "models": [{"id": MODEL, "providers": providers}]}


FLEETS = {"noisy": noisy_fleet, "sporadic": sporadic_fleet}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", choices=("noisy", "sporadic"), default="noisy")
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--mode", choices=("enforce", "observe"), default="enforce")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--languages", default=",".join(SUPPORTED_LANGUAGES), help="comma-separated"
    )
    args = parser.parse_args()
    settings = Settings(
        languages=tuple(args.languages.split(",")),
        ttft_threshold_s=TTFT_THRESHOLD_S,
        models=(ModelSettings(id=MODEL),),
    )
    configure_logging(settings, level=logging.WARNING)  # the noise is expected: keep it quiet
    started = time.perf_counter()
    result = asyncio.run(
        run_drill(FLEETS[args.fleet](args.seed), args.rounds, settings, mode=args.mode)
    )
    took = time.perf_counter() - started
    verdicts = Counter(e["verdict"] for e in result.of_kind("verdict"))
    contracts = Counter(
        (name, r["result"])
        for e in result.of_kind("verdict")
        for name, r in e["contracts"].items()
        if r["result"] in ("fail", "transport_error")
    )
    unsure = Counter(
        (name, r["reason"] or "-")
        for e in result.of_kind("verdict")
        for name, r in e["contracts"].items()
        if r["result"] == "inconclusive"
    )
    events = Counter(e["event"] for e in result.events if e["event"] not in ("verdict", "summary"))
    print(
        f"rounds:            {args.rounds} of the {args.fleet} fleet ({args.mode} mode, "
        f"{len(settings.languages)} languages)"
    )
    print(f"quarantines:       {len(result.of_kind('quarantine'))}")
    print(f"would_quarantine:  {len(result.of_kind('would_quarantine'))}")
    print(f"ignore list:       {result.summary['ignore']}")
    print(f"verdicts:          {dict(sorted(verdicts.items()))}")
    print(f"failing/transport: {dict(sorted(contracts.items()))}")
    print(f"inconclusive:      {dict(sorted(unsure.items()))}")
    print(f"other events:      {dict(sorted(events.items()))}")
    print(f"time taken:        {took:.1f} s ({took / args.rounds * 1000:.0f} ms per round)")


if __name__ == "__main__":
    main()
