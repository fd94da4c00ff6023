"""Benchmark: GET /v1/ignore-list against GET /healthz of the same server, 100 connections.

Serves the real app (seeded SQLite store, uvicorn) in a subprocess, then drives it from this
process with a minimal keep-alive HTTP/1.1 client on asyncio (so the client is not the
bottleneck). Prints throughput and latency percentiles of each endpoint and the ratio; exits 1
when the ignore list serves less than 70 % of /healthz's throughput or any request fails.

    .venv/bin/python tests/bench/bench_api.py [--requests 6000] [--connections 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from canary.service.ports import free_port

HERE = Path(__file__).resolve().parent
TARGET_RATIO = 0.70


def serve(port: int, directory: str) -> None:
    """The server side (run in a subprocess): seed a store and serve the real app with uvicorn."""
    sys.path.insert(0, str(HERE.parent / "api"))
    import uvicorn
    from ops_seed import MODEL, POLICY, builtin, seed, settings

    from canary.api.app import create_app
    from canary.service.ignore_list import IgnoreListService
    from canary.store.repository import Store

    url = f"sqlite:///{Path(directory) / 'bench.db'}"
    store = Store(url)
    store.upgrade()
    seed(store, MODEL)
    service = IgnoreListService(store, builtin(MODEL), [MODEL], POLICY)
    service.refresh()
    app = create_app(settings(url, MODEL), store, service)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


async def _wait_ready(port: int, deadline_s: float = 60.0) -> None:
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
            await writer.drain()
            if (await reader.readline()).startswith(b"HTTP/1.1 200"):
                writer.close()
                return
            writer.close()
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit("the server did not start")


async def _read_response(reader: asyncio.StreamReader) -> int:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed")
    status = int(status_line.split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return status


async def _hammer(
    port: int, path: str, total: int, connections: int
) -> tuple[float, list[float], int]:
    request = f"GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\n\r\n".encode()
    remaining = total
    latencies: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal remaining, errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while remaining > 0:
                remaining -= 1
                sent = time.perf_counter()
                writer.write(request)
                await writer.drain()
                try:
                    status = await _read_response(reader)
                except (ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError):
                    errors += 1
                    return
                latencies.append(time.perf_counter() - sent)
                if status != 200:
                    errors += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.perf_counter() - start, latencies, errors


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else float("nan")


async def _bench(port: int, requests: int, connections: int, rounds: int) -> int:
    from urllib.parse import quote

    sys.path.insert(0, str(HERE.parent / "api"))
    from ops_seed import MODEL

    paths = {"/healthz": "/healthz", "/v1/ignore-list": f"/v1/ignore-list?model={quote(MODEL)}"}
    await _wait_ready(port)
    for path in paths.values():  # warm up both
        await _hammer(port, path, 500, connections)
    best: dict[str, tuple[float, float, float, int]] = {}
    for _ in range(rounds):  # alternate, keep each endpoint's best round: the machine is shared
        for name, path in paths.items():
            elapsed, latencies, errors = await _hammer(port, path, requests, connections)
            rps = len(latencies) / elapsed
            figures = (rps, _pct(latencies, 50) * 1000, _pct(latencies, 99) * 1000, errors)
            total_errors = best.get(name, (0, 0, 0, 0))[3] + errors
            if name not in best or rps > best[name][0]:
                best[name] = (*figures[:3], total_errors)
            else:
                best[name] = (*best[name][:3], total_errors)
    print(f"{connections} connections, {requests} requests per run, best of {rounds} runs each")
    print(f"{'endpoint':<18}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}")
    for name, (rps, p50, p99, errors) in best.items():
        print(f"{name:<18}{rps:>10.0f}{p50:>10.1f}{p99:>10.1f}{errors:>8}")
    ratio = best["/v1/ignore-list"][0] / best["/healthz"][0]
    errors = sum(b[3] for b in best.values())
    print(
        f"ignore-list / healthz throughput: {ratio:.0%} "
        f"(target >= {TARGET_RATIO:.0%}), errors: {errors}"
    )
    return 0 if ratio >= TARGET_RATIO and errors == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.dir)
        return 0
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), "--dir", directory],
            env={**os.environ, "CANARY_LOG_FORMAT": "json"},
        )
        try:
            return asyncio.run(_bench(port, args.requests, args.connections, args.rounds))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
