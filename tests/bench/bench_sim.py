"""Benchmark: how far the simulator's first tokens fall behind the configured time to first token.

Runs `canary sim` as a separate process with a generated scenario of 20 models x 15 providers
(300 endpoints), opens 200 concurrent pinned streams with httpx.AsyncClient, and prints the
p50/p95/p99 of the lag (observed first content token - configured ttft), seen by the client and
by the server (its request log). Target: p99 within 10 ms.

    .venv/bin/python tests/bench/bench_sim.py [--streams 200] [--rounds 2] [--ramp 0.3]

The streams are opened over `--ramp` seconds (default 1 s, shorter than any stream, so all of
them are open at once; the peak is printed). A shorter ramp (`--ramp 0.3`) turns it into a burst
that mostly measures how fast the Python client can send 200 requests: the last lines split the
client-observed lag into send -> server handler and server send -> client read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from canary.service.ports import free_port

PROMPTS = [
    "Continue the scene in the tavern, please.",
    "Continue a cena: o cavaleiro entra na taverna escura.",
    "Continúa la escena: el caballero entra en la taberna.",
    "Continuez la scène : le chevalier entre dans la taverne.",
    "Setze die Szene fort: Der Ritter betritt die Taverne.",
    "Продолжи сцену: рыцарь входит в таверну.",
    "続きを書いてください。騎士が酒場に入る。",
    "请继续这个场景：骑士走进了酒馆。",
]


def scenario(models: int, providers: int, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    return {
        "seed": seed,
        "models": [
            {
                "id": f"bench/model-{m}",
                "providers": [
                    {
                        "tag": f"host{p}" if p % 3 else f"host{p}/fp8",
                        "name": f"Host {p}",
                        "quantization": "fp8",
                        "price": {"prompt": 0.1 + p / 100, "completion": 0.3 + p / 50},
                        "ttft_ms": rng.choice([600, 800, 1000, 1200, 1500]),
                        "tokens_per_second": rng.choice([60, 90, 150]),
                    }
                    for p in range(providers)
                ],
            }
            for m in range(models)
        ],
    }


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return (
        f"p50={pick(0.5):7.2f} ms  p95={pick(0.95):7.2f} ms  p99={pick(0.99):7.2f} ms  "
        f"max={ordered[-1]:7.2f} ms  (n={len(ordered)})"
    )


_FIRST_CONTENT = re.compile(rb'"delta":\{"role":"assistant","content":"[^"]')


class Open:
    """Counts the streams open at once, to show that they really overlap."""

    now = 0
    peak = 0


async def one_stream(
    client: httpx.AsyncClient,
    model: str,
    tag: str,
    ttft_ms: float,
    prompt: str,
    delay_s: float,
    max_tokens: int,
) -> tuple[str, float, float] | None:
    """(generation id, sent, first content token seen), on the shared monotonic clock."""
    payload = {
        "model": model,
        "stream": True,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": prompt}],
        "provider": {"only": [tag], "order": [tag], "allow_fallbacks": False},
    }
    await asyncio.sleep(delay_s)
    sent = time.perf_counter()
    first: float | None = None
    Open.now += 1
    Open.peak = max(Open.peak, Open.now)
    try:
        async with client.stream("POST", "/chat/completions", json=payload) as r:
            gen_id = r.headers.get("x-generation-id", "")
            buffer = b""
            async for text in r.aiter_raw():
                if first is None:
                    buffer += text
                    if _FIRST_CONTENT.search(buffer):
                        first = time.perf_counter()
    finally:
        Open.now -= 1
    if first is None:
        return None
    return gen_id, sent, first


async def run(base: str, root: str, spec: dict[str, Any], args: argparse.Namespace) -> None:
    rng = random.Random(3)
    endpoints = [(m["id"], p["tag"], p["ttft_ms"]) for m in spec["models"] for p in m["providers"]]
    streams = args.streams
    # Several clients: httpcore's pool does work quadratic in the requests it holds at once, so
    # one pool with 200 live streams measures the client, not the server.
    per_client = max(1, streams // args.clients)
    limits = httpx.Limits(max_connections=per_client * 2, max_keepalive_connections=per_client * 2)
    clients = [
        httpx.AsyncClient(
            base_url=base,
            limits=limits,
            timeout=httpx.Timeout(60.0),
            headers={"Authorization": "Bearer bench"},
        )
        for _ in range(args.clients)
    ]
    seen: list[tuple[str, float, float]] = []
    try:
        # open the pools' connections first, so the figures measure streaming, not handshakes
        await asyncio.gather(
            *(
                one_stream(clients[i % len(clients)], *endpoints[i], PROMPTS[0], i * 0.002, 4)
                for i in range(streams)
            )
        )
        await clients[0].delete(f"{root}/_sim/requests")
        Open.peak = 0
        for _ in range(args.rounds):
            picks = [rng.choice(endpoints) for _ in range(streams)]
            step = args.ramp / streams
            results = await asyncio.gather(
                *(
                    one_stream(
                        clients[i % len(clients)],
                        *pick,
                        PROMPTS[i % len(PROMPTS)],
                        i * step,
                        args.tokens,
                    )
                    for i, pick in enumerate(picks)
                )
            )
            seen.extend(r for r in results if r is not None)
        log = (await clients[0].get(f"{root}/_sim/requests")).json()["requests"]
    finally:
        for client in clients:
            await client.aclose()
    # time.perf_counter() is the system-wide monotonic clock on Linux, so the server's request
    # log and the client's marks can be compared: where does the client-observed lag come from?
    by_id = {e.get("id"): e for e in log}
    client_lags, inbound, outbound, server_lags = [], [], [], []
    for gen_id, sent, first in seen:
        entry = by_id.get(gen_id)
        if entry is None or entry.get("first_token_s") is None:
            continue
        ttft = entry["configured_ttft_ms"]
        client_lags.append((first - sent) * 1000 - ttft)
        server_lags.append(entry["first_token_delay_ms"] - ttft)
        inbound.append((entry["arrived_s"] - sent) * 1000)
        outbound.append((first - entry["first_token_s"]) * 1000)
    print(
        f"endpoints: {len(endpoints)}   streams per round: {streams} (peak open at once: "
        f"{Open.peak})   rounds: {args.rounds}   opened over {args.ramp * 1000:.0f} ms   "
        f"max_tokens: {args.tokens}   clients: {args.clients}"
    )
    print(
        f"client-observed lag (first content token - configured ttft): {percentiles(client_lags)}"
    )
    print(
        f"server-side lag (request log first_token_delay_ms - ttft):   {percentiles(server_lags)}"
    )
    print(f"  of the client figure: client send -> server handler:        {percentiles(inbound)}")
    print(f"                        server sends token -> client sees it: {percentiles(outbound)}")


class SimProcess:
    """`canary sim --scenario FILE --port N` in a separate process, for as long as the block runs:
    its CPU and its event loop are apart from the benchmark's."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.root}/api/v1"
        self._tmp = tempfile.TemporaryDirectory()
        self._proc: subprocess.Popen[bytes] | None = None
        self._http = httpx.Client(timeout=30)  # one client: each new one loads the CA bundle

    def __enter__(self) -> SimProcess:
        path = Path(self._tmp.name) / "generated.yaml"
        path.write_text(yaml.safe_dump(self.spec), encoding="utf-8")
        canary = shutil.which("canary", path=str(Path(sys.executable).parent)) or "canary"
        self._proc = proc = subprocess.Popen(
            [canary, "sim", "--scenario", str(path), "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ},
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self._http.get(f"{self.base_url}/models", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise SystemExit("canary sim did not start")
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stderr is not None:
                self._proc.stderr.close()
        self._tmp.cleanup()
        self._http.close()

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def requests(self) -> list[dict[str, Any]]:
        return list(self._http.get(f"{self.root}/_sim/requests").json()["requests"])

    def clear_requests(self) -> None:
        self._http.delete(f"{self.root}/_sim/requests")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (the machine is shared: they qualify every figure)."""
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "unknown"


def run_loop(coro: Any) -> Any:
    """Run on uvloop when it is installed (as `canary serve` does), else on asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--providers", type=int, default=15)
    parser.add_argument(
        "--ramp",
        type=float,
        default=1.0,
        help="seconds over which the streams are opened (0: all at once)",
    )
    parser.add_argument("--tokens", type=int, default=80, help="max_tokens per stream")
    parser.add_argument("--clients", type=int, default=20, help="httpx.AsyncClient instances")
    args = parser.parse_args()
    spec = scenario(args.models, args.providers)
    with SimProcess(spec) as sim:
        run_loop(run(sim.base_url, sim.root, spec, args))
    print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
