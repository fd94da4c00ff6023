"""Benchmark of the OpenRouter client: parsing cost, and how exact the measured TTFT is.

Run: .venv/bin/python tests/bench/bench_openrouter_client.py

1. CPU cost of reading one probe stream (SSE parsing + chunk assembly) for a 400-token answer
   sent in 7-byte pieces, and for every real capture under ../shared/fixtures/openrouter/stream.
2. A loopback server (a child process) sends the first content token DELAY_S after the
   request arrives, then the other 399 at 500 tokens/s; with 1, 64 and 200 concurrent probes
   through one client, it prints how much later than DELAY_S the client measured the first
   token (client overhead: HTTP, parsing, the other streams sharing the event loop).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # shared_data, for wire_server
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "openrouter"))

from wire_server import FIXTURES, Reply, Request, WireServer, chunk, sse, usage_chunk  # noqa: E402

from canary.core.model import Contract, Endpoint, Pricing, Transport  # noqa: E402
from canary.openrouter.client import OpenRouterClient  # noqa: E402
from canary.openrouter.sse import SSEParser  # noqa: E402
from canary.openrouter.stream import StreamAssembler  # noqa: E402

DELAY_S = 0.05
TOKENS = 400
ENDPOINT = Endpoint(model="acme/m", tag="alpha", provider_name="DeepInfra", pricing=Pricing(0, 0))
BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": TOKENS}
STREAM = sse(*[chunk(f" tok{i}") for i in range(TOKENS)], chunk("", finish="stop"), usage_chunk())


def read(body: bytes, piece: int) -> None:
    parser = SSEParser()
    assembler = StreamAssembler()
    for start in range(0, len(body), piece):
        for event in parser.feed(body[start : start + piece]):
            assembler.feed(event.data, 0.0)
    assert assembler.finish().transport is not None


def cpu_per_read(body: bytes, piece: int, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        read(body, piece)
    return (time.process_time() - start) / repeat


def bench_parsing() -> None:
    print(f"== parsing (CPU per stream), {len(STREAM)} bytes, {TOKENS} content chunks")
    for piece in (7, 512, 16384):
        print(f"  {TOKENS}-token stream in {piece:>5}-byte pieces: "
              f"{cpu_per_read(STREAM, piece, 50) * 1000:7.3f} ms")  # fmt: skip
    folder = FIXTURES / "stream"
    if folder.is_dir():
        for path in sorted(folder.glob("*.sse")):
            body = path.read_bytes()
            print(f"  {path.name[:58]:<58} {len(body):>6} B "
                  f"{cpu_per_read(body, 1024, 50) * 1000:7.3f} ms")  # fmt: skip


EVENTS = [sse(chunk(f" tok{i}"), done=False, keepalive=False) for i in range(TOKENS)]
TAIL = sse(chunk("", finish="stop"), usage_chunk(), keepalive=False)
PACE_S = 0.02  # ten tokens every 20 ms: 500 tokens/s, a fast provider


async def handler(request: Request, reply: Reply) -> None:
    await reply.head(200, {"Content-Type": "text/event-stream"})
    await reply.piece(b": OPENROUTER PROCESSING\n\n")
    await asyncio.sleep(DELAY_S)
    await reply.piece(EVENTS[0])
    for start in range(1, TOKENS, 10):
        await asyncio.sleep(PACE_S)
        await reply.piece(b"".join(EVENTS[start : start + 10]))
    await reply.piece(TAIL)
    await reply.end()


class ServerProcess:
    """The wire server in a child process, so its CPU and GIL do not delay the client."""

    def __init__(self) -> None:
        self._parent, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("fork").Process(
            target=_serve_forever, args=(child,), daemon=True
        )
        self.base_url = ""

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.base_url = self._parent.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        self._process.join()


def _serve_forever(conn: Connection) -> None:
    async def serve() -> None:
        async with WireServer(handler) as server:
            conn.send(server.base_url)
            await asyncio.Event().wait()

    asyncio.run(serve())


async def bench_ttft(base_url: str, concurrency: int) -> None:
    async with OpenRouterClient(base_url, "k", max_connections=concurrency) as client:
        await client.probe(ENDPOINT, BODY, contract=Contract.ttft)  # warm up
        started = time.perf_counter()
        cpu = time.process_time()
        observations = await asyncio.gather(
            *[client.probe(ENDPOINT, BODY, contract=Contract.ttft) for _ in range(concurrency)]
        )
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
    assert all(o.transport is Transport.ok for o in observations), observations[0].error
    late = sorted((o.ttft_s or 0.0) - DELAY_S for o in observations)
    p99 = late[min(len(late) - 1, int(len(late) * 0.99))]
    print(
        f"  {concurrency:>3} concurrent: first token measured late by p50 "
        f"{statistics.median(late) * 1000:6.2f} ms, p99 {p99 * 1000:6.2f} ms; "
        f"wall {wall:5.2f} s; client CPU {cpu / concurrency * 1000:5.2f} ms per probe"
    )


def main() -> None:
    bench_parsing()
    print(
        f"== ttft accuracy over loopback (first token sent {DELAY_S * 1000:.0f} ms after arrival)"
    )
    with ServerProcess() as server:
        for concurrency in (1, 64, 200):
            asyncio.run(bench_ttft(server.base_url, concurrency))


if __name__ == "__main__":
    main()
