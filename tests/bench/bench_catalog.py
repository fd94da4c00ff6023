"""Benchmark: a whole catalog in one round, as a user runs it: `canary round` processes.

    .venv/bin/python tests/bench/bench_catalog.py [--models 200] [--endpoints 10] [--slugs 40]
        [--replicas 1,2] [--concurrency 128] [--per-provider 8] [--ttft-ms 200,800]
        [--tps 30,120] [--seed 5] [--store postgres|sqlite] [--answers as_asked|long]

Issue 16's 300-endpoint scenario with default settings on the embedded store:

    bench_catalog.py --models 20 --endpoints 15 --slugs 15 --ttft-ms 200,400 --tps 60,60 \
        --concurrency 0 --per-provider 0 --store sqlite --replicas 1

A generated scenario of `--models` models x `--endpoints` endpoints drawn from `--slugs`
provider slugs (first token uniform in --ttft-ms, tokens per second uniform in --tps; the
simulator streams one chunk per token; its prose answers are as long as canary's prompts ask, about
42 tokens on average, or with `--answers long` two or three passages, about 94) runs in `canary
sim`, a separate process. For each replica
count, a fresh PostgreSQL database is migrated, then that many `canary round` processes start at
once on it with the same settings (concurrency and per-provider concurrency are per replica).
Printed per run:

- wall: from the first replica's `round_started` log line to the last replica's exit (start-up,
  up to that line, is reported apart);
- ideal: the largest of all planned request time / (concurrency x replicas), the busiest provider
  slug's planned time / (per-provider x replicas), and the longest dependency chain (a first look
  and the re-checks sent after it, per endpoint). Planned times come from the simulator's request
  log (`planned_ms`: configured ttft + tokens / speed, counted from arrival);
- wall / ideal (target <= 1.15 for one replica; two replicas' wall <= 0.6 x one replica's);
- CPU per request: the replicas' CPU after their `round_started` line (start-up excluded), over
  the requests the simulator logged (target <= 6 ms at 60 tokens/s);
- peak RSS of the largest replica (target <= 1 GiB at 2,000 endpoints);
- every model judged exactly once in the slot (from the store).

BENCH_ROUND_WRAP, when set, is put before each `canary` command line, e.g. to profile a replica:
`BENCH_ROUND_WRAP="$PWD/.venv/bin/python -m cProfile -o round.prof"`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sim import SimProcess, load_average  # noqa: E402
from bench_store import postgres_url  # noqa: E402

from canary.config.settings import Settings  # noqa: E402

KEY = "bench-catalog-key"
PARAMETERS = [
    "max_tokens",
    "temperature",
    "response_format",
    "structured_outputs",
    "tools",
    "tool_choice",
]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DEFAULT_CONCURRENCY = Settings().concurrency
DEFAULT_PER_PROVIDER = Settings().per_provider_concurrency


def scenario(
    models: int, endpoints: int, slugs: int, ttft: tuple[int, int], tps: tuple[int, int], seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    names = [f"prov{i:02d}" for i in range(slugs)]
    spec = []
    for m in range(models):
        chosen = rng.sample(names, endpoints)
        spec.append(
            {
                "id": f"catalog/model-{m:03d}",
                "providers": [
                    {
                        "tag": slug if i % 2 else f"{slug}/fp8",
                        "name": slug.title(),
                        "quantization": "fp8" if i % 2 == 0 else "bf16",
                        "price": {"prompt": 0.1 + i / 100, "completion": 0.3 + i / 50},
                        "context_length": 32768,
                        "supported_parameters": PARAMETERS,
                        "ttft_ms": rng.randint(*ttft),
                        "tokens_per_second": rng.randint(*tps),
                    }
                    for i, slug in enumerate(chosen)
                ],
            }
        )
    return {"seed": seed, "models": spec}


def ideal_of(log: list[dict[str, Any]], concurrency: int, per_provider: int) -> dict[str, float]:
    served = [e for e in log if e.get("planned_ms") is not None]
    by_slug: dict[str, float] = defaultdict(float)
    by_endpoint: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for e in served:
        planned = e["planned_ms"] / 1000
        by_slug[str(e["provider"]).split("/", 1)[0]] += planned
        by_endpoint[(e["model"], e["provider"])].append((e["arrived_s"], planned))
    chain = 0.0
    for requests in by_endpoint.values():
        requests.sort()
        first_done = min(a + p for a, p in requests)
        first_looks = [p for a, p in requests if a < first_done]
        checks = [p for a, p in requests if a >= first_done]
        chain = max(chain, max(first_looks) + (max(checks) if checks else 0.0))
    return {
        "planned/concurrency": sum(e["planned_ms"] / 1000 for e in served) / concurrency,
        "busiest slug/per-provider": max(by_slug.values(), default=0.0) / per_provider,
        "longest chain": chain,
    }


@dataclass
class Replica:
    proc: subprocess.Popen[str]
    started: float
    round_started: float | None = None
    cpu_at_round_s: float | None = None
    system_at_round_s: float | None = None
    lines: list[str] = field(default_factory=list)
    ended: float | None = None
    cpu_s: float = 0.0
    system_s: float = 0.0
    max_rss_kib: int = 0

    def watch(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if self.round_started is None and '"round_started"' in line:
                self.round_started = time.perf_counter()
                user, system = _cpu_parts(self.proc.pid)
                self.cpu_at_round_s, self.system_at_round_s = user + system, system


def _cpu_parts(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS


def _cpu_of(pid: int) -> float:
    return sum(_cpu_parts(pid))


def run(sim: SimProcess, settings_path: Path, replicas: int) -> tuple[list[Replica], float]:
    canary = Path(sys.executable).parent / "canary"
    env = {**os.environ, "OPENROUTER_API_KEY": KEY, "CANARY_LOG_FORMAT": "json"}
    started = time.perf_counter()
    running = []
    for _ in range(replicas):
        wrap = os.environ.get("BENCH_ROUND_WRAP", "").split()
        proc = subprocess.Popen(
            [*wrap, str(canary), "--config", str(settings_path), "round"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        running.append(Replica(proc, time.perf_counter()))
    watchers = [threading.Thread(target=r.watch, daemon=True) for r in running]
    for w in watchers:
        w.start()
    for r in running:
        _, status, usage = os.wait4(r.proc.pid, 0)
        r.ended = time.perf_counter()
        r.cpu_s = usage.ru_utime + usage.ru_stime
        r.system_s = usage.ru_stime
        r.max_rss_kib = usage.ru_maxrss
        r.proc.returncode = os.waitstatus_to_exitcode(status)
    for w in watchers:
        w.join(timeout=10)
    return running, started


def _utilisation(requests: list[dict[str, Any]]) -> None:
    """Requests in flight per 2 s of the run (arrival to planned end), as the simulator saw it."""
    spans = [
        (e["arrived_s"], e["arrived_s"] + e["planned_ms"] / 1000)
        for e in requests
        if e.get("planned_ms")
    ]
    start = min(s for s, _ in spans)
    end = max(e for _, e in spans)
    t, line = start, []
    while t < end:
        line.append(str(sum(1 for s, e in spans if s <= t < e)))
        t += 2.0
    print("  in flight every 2 s:", " ".join(line))


@contextmanager
def store_url(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="canary-catalog-db-") as folder:
            yield f"sqlite:///{folder}/canary.db"
        return
    with postgres_url() as url:
        if url is None:
            raise SystemExit("PostgreSQL is unreachable: set CANARY_TEST_POSTGRES_URL")
        yield url


def judged_once(url: str, models: list[str]) -> tuple[int, list[str], dict[str, int]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT model, count(*) FROM rounds WHERE status = 'finished' GROUP BY model")
        ).all()
        holders = conn.execute(
            text("SELECT runner_id, count(*) FROM rounds WHERE status = 'finished' GROUP BY 1")
        ).all()
        if os.environ.get("BENCH_TIMELINE"):
            for row in conn.execute(
                text(
                    "SELECT runner_id, model, extract(epoch from started_at) s, "
                    "extract(epoch from finished_at) f FROM rounds ORDER BY started_at"
                )
            ):
                print(
                    "   ", row.runner_id, row.model, round(row.s % 1000, 1), round(row.f % 1000, 1)
                )
    engine.dispose()
    counted = dict(rows)
    wrong = [m for m in models if counted.get(m, 0) != 1]
    return len(counted), wrong, {str(h): int(n) for h, n in holders}


def one_run(
    sim: SimProcess, spec: dict[str, Any], args: argparse.Namespace, replicas: int
) -> dict[str, float]:
    models = [m["id"] for m in spec["models"]]
    with (
        store_url(args.store) as url,
        tempfile.TemporaryDirectory(prefix="canary-catalog-") as folder,
    ):
        settings_path = Path(folder) / "canary.toml"
        body = [
            f'database_url = "{url}"',
            *([] if args.concurrency is None else [f"concurrency = {args.concurrency}"]),
            *(
                []
                if args.per_provider is None
                else [f"per_provider_concurrency = {args.per_provider}"]
            ),
            f'[openrouter]\nbase_url = "{sim.base_url}"',
            *(f'[[models]]\nid = "{m}"' for m in models),
        ]
        settings_path.write_text("\n".join(body) + "\n", encoding="utf-8")
        canary = Path(sys.executable).parent / "canary"
        subprocess.run(
            [str(canary), "--config", str(settings_path), "db", "upgrade"],
            check=True,
            capture_output=True,
        )
        sim.clear_requests()
        sim_cpu = _cpu_of(sim.pid)
        running, _ = run(sim, settings_path, replicas)
        sim_cpu = _cpu_of(sim.pid) - sim_cpu
        log = sim.requests()
        ones, wrong, by_replica = judged_once(url, models)
    requests = [e for e in log if "attempts" in e]
    if os.environ.get("BENCH_TIMELINE"):
        _utilisation(requests)
    concurrency = args.concurrency or DEFAULT_CONCURRENCY
    per_provider = args.per_provider or DEFAULT_PER_PROVIDER
    parts = ideal_of(requests, concurrency * replicas, per_provider * replicas)
    ideal = max(parts.values())
    starts = [r.round_started for r in running if r.round_started is not None]
    first_round = min(starts) if starts else min(r.started for r in running)
    wall = max(r.ended or 0.0 for r in running) - first_round
    startup = [(r.round_started or r.started) - r.started for r in running]
    round_cpu = sum(r.cpu_s - (r.cpu_at_round_s or 0.0) for r in running)
    round_system = sum(r.system_s - (r.system_at_round_s or 0.0) for r in running)
    per_request_ms = round_cpu / max(1, len(requests)) * 1000
    rss_mib = max(r.max_rss_kib for r in running) / 1024
    tokens = [e["completion_tokens"] for e in requests if e.get("completion_tokens") is not None]
    tokens_per_answer = sum(tokens) / max(1, len(tokens))
    print(
        f"== {replicas} replica(s): {len(models)} models, {len(requests)} requests, "
        f"{tokens_per_answer:.0f} tokens (chunks) per answer"
    )
    print("  ideal = max(" + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items()) + ")")
    print(
        f"  wall {wall:7.1f} s   ideal {ideal:7.1f} s   wall/ideal {wall / ideal:5.2f}   "
        f"start-up {', '.join(f'{s:.1f}' for s in startup)} s (apart)"
    )
    print(
        f"  CPU {round_cpu:6.1f} s after start-up (system {round_system:.1f} s) = "
        f"{per_request_ms:5.2f} ms per request; peak RSS {rss_mib:6.0f} MiB"
    )
    print(
        f"  exits {[r.proc.returncode for r in running]}; models judged in the slot: {ones}, "
        f"not exactly once: {len(wrong)}{' ' + str(wrong[:5]) if wrong else ''}; models per "
        f"replica {sorted(by_replica.values())}"
    )
    for r in running:
        if r.proc.returncode != 0 or os.environ.get("BENCH_TIMELINE"):
            print("  stderr tail:", "".join(r.lines[-4:]).strip()[-900:])
    print(
        f"  simulator CPU {sim_cpu:.1f} s over the run ({sim_cpu / max(wall, 1e-9):.0%} of a core)"
    )
    print(f"  load average: {load_average()}")
    return {
        "wall": wall,
        "ideal": ideal,
        "cpu_ms": per_request_ms,
        "rss_mib": rss_mib,
        "tokens_per_answer": tokens_per_answer,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--endpoints", type=int, default=10)
    parser.add_argument("--slugs", type=int, default=40)
    parser.add_argument("--replicas", default="1,2")
    parser.add_argument("--concurrency", type=int, default=128, help="0: the default setting")
    parser.add_argument("--per-provider", type=int, default=8, help="0: the default setting")
    parser.add_argument(
        "--store",
        choices=("postgres", "sqlite"),
        default="postgres",
        help="sqlite: the embedded default, one replica",
    )
    parser.add_argument("--ttft-ms", default="200,800")
    parser.add_argument("--tps", default="30,120")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--answers",
        choices=("as_asked", "long"),
        default="as_asked",
        help="the simulator's prose answers: as long as canary's prompts ask (one sentence for a "
        "latency sample), or 6-12 sentences each (as it answered before)",
    )
    args = parser.parse_args()
    args.concurrency = args.concurrency or None
    args.per_provider = args.per_provider or None
    if args.store == "sqlite" and args.replicas != "1":
        parser.error("--store sqlite runs one replica: pass --replicas 1")
    low, high = (int(x) for x in args.ttft_ms.split(","))
    slow, fast = (int(x) for x in args.tps.split(","))
    spec = scenario(args.models, args.endpoints, args.slugs, (low, high), (slow, fast), args.seed)
    spec["answers"] = args.answers
    print(
        f"catalog: {args.models} models x {args.endpoints} endpoints over {args.slugs} slugs, "
        f"ttft {low}-{high} ms, {slow}-{fast} tokens/s (one chunk per token); concurrency "
        f"{args.concurrency or DEFAULT_CONCURRENCY}, per-provider "
        f"{args.per_provider or DEFAULT_PER_PROVIDER} (per replica); store {args.store}; "
        f"answers {args.answers}"
    )
    results = {}
    with SimProcess(spec) as sim:
        for replicas in (int(x) for x in args.replicas.split(",")):
            results[replicas] = one_run(sim, spec, args, replicas)
    if 1 in results and 2 in results:
        print(
            f"two replicas / one: {results[2]['wall'] / results[1]['wall']:.2f} of the wall "
            "(target <= 0.6; the upstream allows 0.5)"
        )
    print(json.dumps({str(k): v for k, v in results.items()}))


if __name__ == "__main__":
    main()
