"""The equality check on the simulator's model: calibration, power, cost (docs/equality.md).

    nice -n 10 .venv/bin/python tests/bench/bench_equality.py [--checks 4000] [--trials 100]
        [--samples 10,15,20] [--endpoints 5] [--seed 1] [--only calibration|power|cost]
        [--faults "quantized 0.8,substituted"] [--prompts N]

Completions come from the simulator's sampler (canary.sim.ngram, what `canary sim` answers the
equality prompts with) for the prompts of probes/equality.yaml, and are judged by
canary.core.equality with the default settings: the statistics and the simulated model exactly
as the check runs them, without the HTTP round trip (which changes no answer).

1. Calibration: models of ``--endpoints`` identical endpoints; the share of endpoint-checks
   that fail at level 1 % (target: at most 1.5 % over at least 4,000).
2. Power: ``--endpoints`` - 1 healthy endpoints and one faulty (quantized at 0.9, 0.8, 0.6;
   substituted; template_broken), ``--trials`` models per cell, by samples per prompt: the share
   of faulty endpoints that fail, and of the healthy ones beside them (every fault's together:
   they should fail no more than at calibration).
3. Cost: tokens of one endpoint-check (prompt tokens as characters / 4, completions as the
   simulator's words), in dollars at two listed prices, and per day for 2,000 endpoints beside a
   round's estimate (the budget's: 250 prompt tokens and max_tokens out per probe).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Sequence

from canary.config.bundled import bundled_dir
from canary.config.equality_set import EqualityPrompts, load_equality_prompts
from canary.core.equality import Outcome, judge_equality
from canary.sim.ngram import equality_answer

FAULTS: list[tuple[str, dict[str, float | bool]]] = [
    ("quantized 0.9", {"quantized": 0.9}),
    ("quantized 0.8", {"quantized": 0.8}),
    ("quantized 0.6", {"quantized": 0.6}),
    ("substituted", {"substituted": True}),
    ("template_broken", {"template_broken": True}),
]
PRICES = {"sim default ($0.20 / $0.60 per M)": (0.2e-6, 0.6e-6), "($3 / $15 per M)": (3e-6, 15e-6)}


def endpoint(
    tag: str,
    probes: EqualityPrompts,
    samples: int,
    rng: random.Random,
    fault: dict[str, float | bool],
):  # noqa: ANN201
    stories = {
        p.id: [equality_answer(probes.story(p), 1.0, rng, **fault) or "" for _ in range(samples)]
        for p in probes.prompts
    }
    known = {k.id: equality_answer(k.prompt, 0.0, rng, **fault) or "" for k in probes.known}
    return probes.sampled(tag, stories, known)


def model(
    probes: EqualityPrompts,
    endpoints: int,
    samples: int,
    rng: random.Random,
    fault: dict[str, float | bool] | None = None,
) -> list[Outcome]:
    eps = [endpoint(f"e{i}", probes, samples, rng, {}) for i in range(endpoints - 1)]
    eps.append(endpoint("last", probes, samples, rng, fault or {}))
    planned = len(probes.prompts) * samples
    return [r.outcome for r in judge_equality(eps, planned, rng)]


def interval(k: int, n: int) -> str:
    """A Wilson 95 % interval."""
    if n == 0:
        return "-"
    p, z = k / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * max(0, centre - half):.2f}-{100 * (centre + half):.2f} %"


def calibration(probes: EqualityPrompts, checks: int, endpoints: int, seed: int) -> None:
    rng = random.Random(seed)
    started = time.process_time()
    fails = total = inconclusive = 0
    while total < checks:
        for outcome in model(probes, endpoints, probes.samples, rng):
            total += 1
            fails += outcome is Outcome.fail
            inconclusive += outcome is Outcome.inconclusive
    cpu = time.process_time() - started
    print("## Calibration (every endpoint identical, level 1 %)")
    print(f"endpoint-checks {total}, failures {fails} = {100 * fails / total:.2f} % "
          f"(95 % CI {interval(fails, total)}), inconclusive {inconclusive}; "
          f"{endpoints} endpoints a model, {probes.samples} samples x {len(probes.prompts)} "
          f"prompts; CPU {cpu:.0f} s ({1000 * cpu / total:.0f} ms per endpoint-check)")  # fmt: skip


def power(
    probes: EqualityPrompts,
    trials: int,
    samples: Sequence[int],
    endpoints: int,
    seed: int,
    faults: Sequence[str] = (),
) -> None:
    print("\n## Power (one faulty endpoint beside healthy peers, level 1 %)")
    print("| fault | " + " | ".join(f"{s} samples/prompt" for s in samples) + " |")
    print("|---|" + "---|" * len(samples))
    healthy = {per: [0, 0] for per in samples}  # failures, endpoint-checks
    for name, fault in FAULTS:
        if faults and name not in faults:
            continue
        cells = []
        for per in samples:
            rng = random.Random(seed * 1000 + per)
            caught = 0
            for _ in range(trials):
                outcomes = model(probes, endpoints, per, rng, fault)
                caught += outcomes[-1] is Outcome.fail
                healthy[per][0] += sum(o is Outcome.fail for o in outcomes[:-1])
                healthy[per][1] += len(outcomes) - 1
            cells.append(f"{100 * caught / trials:.0f} %")
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = [f"{k} / {n} = {100 * k / n:.2f} % ({interval(k, n)})" for k, n in healthy.values()]
    print("| healthy beside the faulty one (failures) | " + " | ".join(cells) + " |")
    print(f"({trials} models a cell, {endpoints} endpoints each)")


def cost(probes: EqualityPrompts, seed: int) -> None:
    rng = random.Random(seed)
    prompt_tokens = completion_tokens = requests = 0
    for p in probes.prompts:
        for _ in range(probes.samples):
            prompt_tokens += math.ceil(len(probes.system + probes.story(p)) / 4)
            answer = equality_answer(probes.story(p), 1.0, rng) or ""
            completion_tokens += min(len(answer.split()), probes.max_tokens)
            requests += 1
    for k in probes.known:
        prompt_tokens += math.ceil(len(probes.system + k.prompt) / 4)
        completion_tokens += len((equality_answer(k.prompt, 0.0, rng) or "").split())
        requests += 1
    print("\n## Cost of one endpoint-check")
    print(f"{requests} requests, {prompt_tokens} prompt + {completion_tokens} completion tokens")
    round_tokens = (6 * 250, 6 * 400)  # ~6 probes an endpoint-round (3 ttft + 3 contracts)
    print("| prices | per endpoint-check | 2,000 endpoints a day (every 24 h) | "
          "rounds for 2,000 endpoints a day (48 rounds) |")  # fmt: skip
    print("|---|---|---|---|")
    for name, (pin, pout) in PRICES.items():
        check = prompt_tokens * pin + completion_tokens * pout
        rounds = 48 * 2000 * (round_tokens[0] * pin + round_tokens[1] * pout)
        print(f"| {name} | ${check:.5f} | ${2000 * check:.2f} | ${rounds:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=4000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--samples", default="10,15,20")
    parser.add_argument("--endpoints", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("calibration", "power", "cost"))
    parser.add_argument("--prompts", type=int, default=0, help="only the first N prompts")
    parser.add_argument("--faults", default="", help='power: only these, e.g. "quantized 0.8"')
    args = parser.parse_args()
    probes = load_equality_prompts(bundled_dir("probes"))
    if args.prompts:
        probes = probes.model_copy(update={"prompts": probes.prompts[: args.prompts]})
    if args.only in (None, "cost"):
        cost(probes, args.seed)
    if args.only in (None, "calibration"):
        calibration(probes, args.checks, args.endpoints, args.seed)
    if args.only in (None, "power"):
        samples = [int(s) for s in args.samples.split(",")]
        faults = [f.strip() for f in args.faults.split(",") if f.strip()]
        power(probes, args.trials, samples, args.endpoints, args.seed, faults)


if __name__ == "__main__":
    main()
