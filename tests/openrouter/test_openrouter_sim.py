"""End to end: the real client against the bundled OpenRouter simulator (canary.sim)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs
from wire_server import run

from canary.core.model import Contract, Endpoint, Observation, Transport
from canary.openrouter.client import ListingError, OpenRouterClient
from canary.service.logs import configure_logging


@pytest.fixture(autouse=True)
def _logging_set_up() -> None:
    """canary's logging is set up first, so capture_logs sees what the first line logged (a
    logger's first line would otherwise set it up inside the capture, replacing it)."""
    configure_logging()


sim_server = pytest.importorskip("canary.sim.server")

MODEL = "acme/e2e"
FAST = {"ttft_ms": 10, "tokens_per_second": 4000}
PARAMS = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs"]
SCENARIO: dict[str, Any] = {
    "seed": 7,
    "models": [
        {
            "id": MODEL,
            "providers": [
                {"tag": "alpha", "name": "Alpha", "supported_parameters": PARAMS, **FAST},
                {"tag": "bravo/fp8", "name": "Bravo", **FAST,
                 "faults": [{"kind": "served_by", "tag": "alpha"}]},
                {"tag": "charlie", "name": "Charlie", **FAST,
                 "faults": [{"kind": "http_error", "status": 429, "retry_after": 3}]},
                {"tag": "delta", "name": "Delta", **FAST,
                 "faults": [{"kind": "midstream_error", "after_tokens": 3, "code": 502}]},
                {"tag": "echo", "name": "Echo", **FAST,
                 "faults": [{"kind": "stall", "after_tokens": 2}]},
                {"tag": "foxtrot", "name": "Foxtrot", **FAST,
                 "faults": [{"kind": "disconnect", "after_tokens": 2}]},
                {"tag": "golf", "name": "Golf", **FAST, "supported_parameters": ["max_tokens"],
                 "faults": [{"kind": "reasoning_first", "ms": 30}]},
            ],
        }
    ],
}  # fmt: skip
BODY: dict[str, Any] = {
    "messages": [{"role": "user", "content": "Continue the story of the lighthouse keeper."}],
    "max_tokens": 60,
}


@pytest.fixture(scope="module")
def sim() -> Iterator[Any]:
    with sim_server.start_simulator(SCENARIO) as running:
        yield running


def endpoints(sim: Any) -> dict[str, Endpoint]:
    async def go() -> list[Endpoint]:
        async with OpenRouterClient(sim.base_url, "sk-test") as client:
            return await client.list_endpoints(MODEL)

    return {e.tag: e for e in run(go())}


def probe(sim: Any, tag: str, body: dict[str, Any] | None = None, **kwargs: Any) -> Observation:
    endpoint = endpoints(sim)[tag]

    async def go() -> Observation:
        async with OpenRouterClient(sim.base_url, "sk-test", **kwargs) as client:
            return await client.probe(endpoint, body or BODY, contract=Contract.refusal)

    return run(go())


def last_request(sim: Any) -> dict[str, Any]:
    requests: list[dict[str, Any]] = sim.state.requests()
    return requests[-1]


def test_listing_through_the_simulator(sim: Any) -> None:
    listed = endpoints(sim)
    assert set(listed) == {"alpha", "bravo/fp8", "charlie", "delta", "echo", "foxtrot", "golf"}
    alpha = listed["alpha"]
    assert alpha.provider_name == "Alpha" and alpha.supports("response_format")
    assert alpha.pricing.prompt > 0 and alpha.model == MODEL


def test_unknown_model_listing_is_a_configuration_error(sim: Any) -> None:
    async def go() -> None:
        async with OpenRouterClient(sim.base_url, "sk-test") as client:
            await client.list_endpoints("acme/nope")

    with pytest.raises(ListingError) as info:
        run(go())
    assert info.value.transport is Transport.auth_config and info.value.attempts == 1


def test_healthy_stream_completes_and_the_pin_is_honoured(sim: Any) -> None:
    obs = probe(sim, "alpha")
    assert obs.transport is Transport.ok and obs.completed, obs.error
    assert obs.content.strip() and obs.finish_reason in ("stop", "length")
    assert obs.served_by == "Alpha" and obs.attribution_ok
    assert obs.ttft_s is not None and obs.total_s is not None and obs.ttft_s <= obs.total_s
    assert obs.usage.prompt_tokens and obs.usage.completion_tokens
    logged = last_request(sim)
    assert logged["pinned"] == ["alpha"] and logged["provider"] == "alpha"


def test_require_parameters_is_sent_with_response_format(sim: Any) -> None:
    schema = {"type": "object", "properties": {"mood": {"type": "string"}}, "required": ["mood"]}
    body = {
        **BODY,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "mood", "strict": True, "schema": schema},
        },
    }
    obs = probe(sim, "alpha", body)
    assert obs.transport is Transport.ok, obs.error
    assert '"mood"' in obs.content
    unsupported = probe(sim, "golf", body)  # golf does not advertise response_format
    assert unsupported.transport is Transport.unroutable and unsupported.status == 404


def test_served_by_another_provider_is_an_attribution_mismatch(sim: Any) -> None:
    with capture_logs() as logs:
        obs = probe(sim, "bravo/fp8")
    assert obs.transport is Transport.ok and not obs.attribution_ok and not obs.completed
    assert obs.served_by == "Alpha"
    assert any(e["event"] == "attribution_mismatch" and e["tag"] == "bravo/fp8" for e in logs)


def test_http_429_is_rate_limited(sim: Any) -> None:
    obs = probe(sim, "charlie")
    assert obs.transport is Transport.rate_limited and obs.status == 429
    assert obs.error is not None and "Charlie" in obs.error


def test_midstream_error_is_a_provider_error(sim: Any) -> None:
    obs = probe(sim, "delta")
    assert obs.transport is Transport.provider_error and obs.status == 200
    assert obs.error is not None and obs.error.startswith("mid-stream")


def test_stall_ends_as_a_timeout(sim: Any) -> None:
    obs = probe(sim, "echo", first_token_timeout_s=5.0, stream_timeout_s=0.3)
    assert obs.transport is Transport.timeout
    assert obs.error is not None and "0.3 s" in obs.error


def test_disconnect_is_a_truncated_stream(sim: Any) -> None:
    obs = probe(sim, "foxtrot")
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and "truncated stream" in obs.error


def test_reasoning_first_is_timed_before_content(sim: Any) -> None:
    obs = probe(sim, "golf")
    assert obs.transport is Transport.ok, obs.error
    assert obs.reasoning_s is not None and obs.ttft_s is not None and obs.reasoning_s < obs.ttft_s
