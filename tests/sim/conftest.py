"""A shared in-process simulator (reset before each test) and small wire helpers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sim_helpers import MODEL

from canary.sim.server import RunningSimulator, start_simulator

# One TLS context for every test's client, as httpx advises (building one reads the CA bundle).
TLS = httpx.create_ssl_context()
ALL_PARAMS = [
    "max_tokens",
    "temperature",
    "seed",
    "response_format",
    "structured_outputs",
    "tools",
    "tool_choice",
]


def scenario() -> dict[str, Any]:
    fast = {"ttft_ms": 5, "tokens_per_second": 4000}
    return {
        "seed": 11,
        "models": [
            {
                "id": MODEL,
                "providers": [
                    {
                        "tag": "alpha",
                        "name": "Alpha",
                        "quantization": "fp8",
                        "price": {"prompt": 0.2, "completion": 0.6},
                        "supported_parameters": ALL_PARAMS,
                        **fast,
                    },
                    {
                        "tag": "bravo/fp8",
                        "name": "Bravo",
                        "quantization": "fp8",
                        "price": {"prompt": 0.3, "completion": 0.9},
                        "supported_parameters": ["max_tokens", "response_format"],
                        **fast,
                    },
                    {
                        "tag": "bravo/flex",
                        "name": "Bravo",
                        "quantization": "fp8",
                        "service_tier": "flex",
                        "price": {"prompt": 0.1, "completion": 0.2},
                        **fast,
                    },
                    {
                        "tag": "charlie",
                        "name": "Charlie",
                        "quantization": "bf16",
                        "price": {"prompt": 0.5, "completion": 1.5},
                        "supported_parameters": ALL_PARAMS,
                        **fast,
                    },
                ],
            },
            {"id": "acme/other-1", "providers": [{"tag": "delta", "name": "Delta", **fast}]},
        ],
        "timeline": [
            {
                "round": 2,
                "model": MODEL,
                "provider": "alpha",
                "faults": [{"kind": "language_drift", "to": "es"}],
            },
            {"round": 3, "model": MODEL, "provider": "charlie", "set": {"quantization": "fp4"}},
        ],
    }


@pytest.fixture(scope="session")
def running() -> Iterator[RunningSimulator]:
    with start_simulator(scenario()) as sim:
        yield sim


@pytest.fixture
def sim(running: RunningSimulator) -> RunningSimulator:
    running.state.reset()
    return running


@pytest.fixture
def client(sim: RunningSimulator) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sim.base_url, headers={"Authorization": "Bearer sk-test"}, timeout=10, verify=TLS
    ) as c:
        yield c
