"""Builders for trace tests: a round report of any size, without running one; a collector."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Transport,
    Usage,
    Verdict,
)
from canary.rounds.outcome import ModelRound
from canary.rounds.prober import EndpointProbing

MODEL = "acme/trace-kit"
AT = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
# an endpoint's probes in a default round: 3 ttft samples, refusal, schema, language, tools
CONTRACTS = (
    Contract.ttft, Contract.ttft, Contract.ttft, Contract.refusal, Contract.schema,
    Contract.language, Contract.tools,
)  # fmt: skip


def synthetic_round(endpoints: int, *, served_model: str = MODEL) -> ModelRound:
    """A finished round of ``endpoints`` passing endpoints, each with the seven probes of a
    default round: ``endpoints * 8 + 1`` spans."""
    start = AT.timestamp()
    probings = []
    verdicts = {}
    for n in range(endpoints):
        tag = f"provider-{n:04d}"
        endpoint = Endpoint(MODEL, tag, tag.title(), Pricing(1e-7, 2e-7), max_completion_tokens=256)
        observations = tuple(
            Observation(
                contract,
                tag,
                Transport.ok,
                language="en",
                ttft_s=0.4,
                total_s=1.5,
                started_at=start + n * 0.001 + k * 0.01,
                finish_reason="stop",
                usage=Usage(prompt_tokens=40, completion_tokens=120),
                served_model=served_model,
                response_id=f"gen-{n}-{k}",
            )
            for k, contract in enumerate(CONTRACTS)
        )
        probings.append(EndpointProbing(endpoint, "en", observations, ()))
        results = tuple(
            ContractResult(c, Result.passed, f"{c.value} passed") for c in dict.fromkeys(CONTRACTS)
        )
        verdicts[tag] = RoundVerdict(MODEL, tag, Verdict.passed, results)
    return ModelRound(MODEL, 1, AT, verdicts=verdicts, probings=probings, decided=True)


def span_count(endpoints: int) -> int:
    return 1 + endpoints * (1 + len(CONTRACTS))


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Collector:
    """An OTLP/HTTP collector on 127.0.0.1 that keeps what it is sent."""

    url: str
    received: list[Received] = field(default_factory=list)


@contextmanager
def collector() -> Iterator[Collector]:
    kept: list[Received] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                kept.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # a short poll: shutdown() waits for one (the default half second, at every test's end)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield Collector(f"http://127.0.0.1:{server.server_address[1]}", kept)
    finally:
        server.shutdown()
        server.server_close()
