"""Benchmark: the prober's RSS after 500 drill rounds must be within 10 % of its RSS after 50.

    .venv/bin/python tests/bench/bench_memory.py [--rounds 500] [--sample-every 50]
        [--languages en,es,...] [--fresh-client] [--tracemalloc] [--database-url URL]

`canary sim` runs as a separate process (so its memory is not counted) with a small healthy
fleet: one model, four fast endpoints (ttft 5 ms, 5,000 tokens/s; two support tools, one
structured outputs). This process runs the rounds as canary/rounds/drill.py does: one real
OpenRouterClient, one Wiring (real lingua over every supported language, a real SQLite store in
a temporary folder unless `--database-url` is given), a RoundRunner per round on a virtual clock
that advances one interval per round. Probes rotate through `--languages` (default: all 17).
With `--fresh-client` every round opens its own client, as `canary serve` does.

Printed: RSS (VmRSS from /proc/self/status) after round 1 and every `--sample-every` rounds,
the objects the garbage collector tracks, the growth of the last sample over the sample at
round 50 (target <= 10 %) with its slope in KiB per round, and with
`--tracemalloc` the Python heap traced at each sample and the 15 biggest growths of Python
allocations between those two samples (tracemalloc's own bookkeeping then adds to the RSS; the
language models live outside the Python heap, in lingua's native code).
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sim import SimProcess, load_average, run_loop  # noqa: E402

from canary.config.settings import SUPPORTED_LANGUAGES, ModelSettings, Settings  # noqa: E402
from canary.core.plan import slot_of  # noqa: E402
from canary.openrouter.client import OpenRouterClient  # noqa: E402
from canary.rounds.drill import SIM_KEY, drill_settings  # noqa: E402
from canary.rounds.runner import RoundRunner  # noqa: E402
from canary.rounds.wiring import Wiring, build_wiring  # noqa: E402
from canary.service.logs import configure_logging  # noqa: E402

MODEL = "acme/memory-1"
BASELINE_ROUND = 50
START = datetime(2026, 1, 5, tzinfo=UTC)
TOOLS = ("max_tokens", "temperature", "top_p", "stop", "tools", "tool_choice")
SCHEMA = ("max_tokens", "temperature", "top_p", "stop", "response_format", "structured_outputs")


def fleet() -> dict[str, Any]:
    tags = ("alpha", "bravo", "charlie/fp8", "delta")
    params = (TOOLS, SCHEMA, TOOLS, ("max_tokens", "temperature", "top_p", "stop"))
    return {
        "seed": 7,
        "models": [
            {
                "id": MODEL,
                "providers": [
                    {
                        "tag": tag,
                        "quantization": "fp8" if tag.endswith("fp8") else "bf16",
                        "ttft_ms": 5,
                        "tokens_per_second": 5000,
                        "supported_parameters": list(p),
                    }
                    for tag, p in zip(tags, params, strict=True)
                ],
            }
        ],
    }


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS in /proc/self/status (this benchmark needs Linux)")


def client_for(settings: Settings) -> OpenRouterClient:
    o = settings.openrouter
    return OpenRouterClient(
        o.base_url,
        SIM_KEY,
        connect_timeout_s=o.connect_timeout_s,
        first_token_timeout_s=o.first_token_timeout_s,
        stream_timeout_s=o.stream_timeout_s,
        listing_deadline_s=o.listing_deadline_s,
        max_connections=max(settings.concurrency, 8),
    )


async def one_round(wiring: Wiring, client: OpenRouterClient, k: int) -> int:
    """Round k on the virtual clock; the number of probes it sent."""
    interval = wiring.settings.interval_minutes
    now = START + (k - 1) * timedelta(minutes=interval)
    runner = RoundRunner(wiring, client, clock=lambda: now)
    reports = await runner.run(scheduled_at=slot_of(now, interval))
    for report in reports:
        if report.error is not None or report.status != "finished":
            raise SystemExit(f"round {k} of {report.model}: {report.status} {report.error}")
    return sum(len(p.observations) for r in reports for p in r.probings)


class Samples:
    def __init__(self, every: int, last: int, trace: bool) -> None:
        self.every = every
        self.last = last
        self.trace = trace
        self.rows: list[tuple[int, int, float, int]] = []  # round, RSS KiB, elapsed s, probes
        self.objects: dict[int, int] = {}  # round -> objects tracked by the garbage collector
        self.snapshots: dict[int, tracemalloc.Snapshot] = {}

    def due(self, k: int) -> bool:
        return k in (1, BASELINE_ROUND, self.last) or k % self.every == 0

    def take(self, k: int, elapsed: float, probes: int) -> None:
        gc.collect()
        rss = rss_kib()
        self.rows.append((k, rss, elapsed, probes))
        self.objects[k] = len(gc.get_objects())
        heap = ""
        if self.trace:
            heap = f"  traced {tracemalloc.get_traced_memory()[0] / 2**20:7.1f} MiB"
            if k in (BASELINE_ROUND, self.last):
                self.snapshots[k] = tracemalloc.take_snapshot()
        print(f"  round {k:5d}  RSS {rss / 1024:8.1f} MiB  {self.objects[k]:8d} objects{heap}"
              f"  {elapsed:7.1f} s  {probes} probes", flush=True)  # fmt: skip


async def drill(args: argparse.Namespace, sim: SimProcess, samples: Samples) -> None:
    languages = tuple(args.languages.split(","))
    base = Settings(languages=languages, models=(ModelSettings(id=MODEL),))
    configure_logging(base, level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="canary-bench-memory-") as folder:
        settings = drill_settings(
            base,
            [MODEL],
            base_url=sim.base_url,
            database_url=args.database_url or f"sqlite:///{Path(folder) / 'memory.db'}",
            mode=None,
            interval_minutes=None,
        )
        wiring = build_wiring(settings)
        probes = 0
        started = time.perf_counter()
        try:
            shared = None if args.fresh_client else await client_for(settings).__aenter__()
            try:
                for k in range(1, args.rounds + 1):
                    if shared is not None:
                        probes += await one_round(wiring, shared, k)
                    else:
                        async with client_for(settings) as client:
                            probes += await one_round(wiring, client, k)
                    if samples.due(k):
                        sim.clear_requests()  # the simulator's request log: keep it small
                        samples.take(k, time.perf_counter() - started, probes)
            finally:
                if shared is not None:
                    await shared.__aexit__(None, None, None)
        finally:
            wiring.store.dispose()


def report(args: argparse.Namespace, samples: Samples) -> None:
    by_round = {k: rss for k, rss, _, _ in samples.rows}
    last_k, last_rss, took, probes = samples.rows[-1]
    print(f"languages: {len(args.languages.split(','))} ({args.languages})")
    print(f"client: {'a fresh one per round' if args.fresh_client else 'one for all rounds'}")
    print(f"time: {took:.1f} s for {last_k} rounds ({took / last_k * 1000:.0f} ms per round), "
          f"{probes} probes; load average {load_average()}")  # fmt: skip
    if BASELINE_ROUND in by_round and last_k > BASELINE_ROUND:
        base = by_round[BASELINE_ROUND]
        growth = (last_rss - base) / base * 100
        verdict = "ok" if growth <= 10 else "OVER TARGET"
        print(f"RSS round {BASELINE_ROUND}: {base / 1024:.1f} MiB, round {last_k}: "
              f"{last_rss / 1024:.1f} MiB, growth {growth:+.2f} % "
              f"(target <= 10 %: {verdict})")  # fmt: skip
        per = (last_rss - base) / (last_k - BASELINE_ROUND)
        print(f"slope: {per:+.1f} KiB per round after round {BASELINE_ROUND}")
        more = samples.objects[last_k] - samples.objects[BASELINE_ROUND]
        print(f"objects tracked by the gc: {more:+d} between round {BASELINE_ROUND} and {last_k}")
    if len(samples.snapshots) == 2:
        stats = samples.snapshots[last_k].compare_to(samples.snapshots[BASELINE_ROUND], "lineno")
        print(f"tracemalloc: top growths between round {BASELINE_ROUND} and round {last_k}")
        for stat in stats[:15]:
            print(f"  {stat}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--sample-every", type=int, default=50)
    parser.add_argument(
        "--languages", default=",".join(SUPPORTED_LANGUAGES), help="comma-separated"
    )
    parser.add_argument("--fresh-client", action="store_true", help="a new client every round")
    parser.add_argument("--tracemalloc", action="store_true", help="show what grew (slower)")
    parser.add_argument("--database-url", help="default: SQLite in a temporary folder")
    args = parser.parse_args()
    if args.rounds <= BASELINE_ROUND:
        parser.error(f"--rounds must be above {BASELINE_ROUND}")
    samples = Samples(args.sample_every, args.rounds, args.tracemalloc)
    # A plain `kill` unwinds like Ctrl-C, so the simulator process and temp folders are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.tracemalloc:
        tracemalloc.start(1)  # one frame: enough for lineno stats, and fast
    print(f"== {args.rounds} drill rounds, 1 model x 4 endpoints (ttft 5 ms, 5000 tokens/s)")
    with SimProcess(fleet()) as sim:
        run_loop(drill(args, sim, samples))
    report(args, samples)


if __name__ == "__main__":
    main()
