"""list_endpoints() against a real loopback server, with a fake clock and sleep for the backoff."""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable

import pytest
from shared_data import CAPTURES
from wire_server import FIXTURES, Reply, Request, WireServer, run

from canary.core.model import Endpoint, Transport
from canary.openrouter.client import ListingError, OpenRouterClient

KEY = "sk-or-v1-listing-secret-9876543210"
LISTING = {
    "data": {
        "id": "acme/m",
        "name": "M",
        "created": 1,
        "description": "x",
        "architecture": {
            "input_modalities": ["text"],
            "output_modalities": ["text"],
            "modality": "text->text",
            "tokenizer": None,
            "instruct_type": None,
        },
        "endpoints": [
            {
                "name": "Alpha | acme/m",
                "model_id": "acme/m",
                "model_name": "M",
                "provider_name": "Alpha",
                "tag": "alpha/fp8",
                "quantization": "fp8",
                "context_length": 32768,
                "pricing": {"prompt": "0.0000002", "completion": "0.0000006"},
                "max_completion_tokens": None,
                "max_prompt_tokens": None,
                "supported_parameters": ["max_tokens", "response_format"],
                "status": 0,
                "uptime_last_30m": None,
                "latency_last_30m": None,
            },
        ],
    }
}


class FakeTime:
    """A clock that only moves when the client sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


Step = Callable[[Reply], Awaitable[None]]


def ok(reply: Reply) -> Awaitable[None]:
    return reply.send_json(200, LISTING)


def status(code: int, headers: dict[str, str] | None = None, body: bytes | None = None) -> Step:
    def step(reply: Reply) -> Awaitable[None]:
        payload = (
            body
            if body is not None
            else json.dumps({"error": {"code": code, "message": f"status {code}"}}).encode()
        )
        return reply.send(code, payload, headers=headers)

    return step


def listing(
    steps: list[Step],
    *,
    seed: int = 3,
    deadline: float = 30.0,
    fake: FakeTime | None = None,
    model: str = "acme/m",
) -> tuple[list[Endpoint] | ListingError, list[Request], FakeTime]:
    fake = fake or FakeTime()

    async def handler(request: Request, reply: Reply) -> None:
        step = steps.pop(0) if len(steps) > 1 else steps[0]
        await step(reply)

    async def go() -> tuple[list[Endpoint] | ListingError, list[Request]]:
        async with WireServer(handler) as server:
            async with OpenRouterClient(
                server.base_url,
                KEY,
                clock=fake.clock,
                sleep=fake.sleep,
                rng=random.Random(seed),
                listing_deadline_s=deadline,
            ) as client:
                try:
                    result: list[Endpoint] | ListingError = await client.list_endpoints(model)
                except ListingError as exc:
                    result = exc
            return result, server.requests

    result, requests = run(go())
    return result, requests, fake


def test_listing_parses_and_sends_the_key() -> None:
    result, requests, fake = listing([ok])
    assert isinstance(result, list)
    (endpoint,) = result
    assert (endpoint.model, endpoint.tag, endpoint.provider_name) == (
        "acme/m",
        "alpha/fp8",
        "Alpha",
    )
    assert endpoint.pricing.prompt == pytest.approx(2e-7) and endpoint.supports("response_format")
    (request,) = requests
    assert request.method == "GET" and request.path == "/api/v1/models/acme/m/endpoints"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert fake.slept == []


def test_real_fixture_served_over_the_wire() -> None:
    path = FIXTURES / "endpoints" / "ploke_deepseek-chat-v3.1_2025-08-30.json"
    if not path.exists():
        pytest.skip(CAPTURES.reason)
    raw = b"\n   \n" + path.read_bytes()  # bodies may start with whitespace

    def serve(reply: Reply) -> Awaitable[None]:
        return reply.send(200, raw)

    result, _, _ = listing([serve], model="deepseek/deepseek-chat-v3.1")
    assert isinstance(result, list) and len(result) == 11


def test_retry_after_is_honoured_then_the_listing_succeeds() -> None:
    result, requests, fake = listing([status(429, {"Retry-After": "7"}), ok])
    assert isinstance(result, list) and len(requests) == 2
    assert fake.slept == [7.0]


def test_backoff_is_exponential_with_full_jitter() -> None:
    result, requests, fake = listing([status(503), status(502), status(500), ok], seed=11)
    assert isinstance(result, list) and len(requests) == 4
    rng = random.Random(11)
    assert fake.slept == [rng.uniform(0, 0.5), rng.uniform(0, 1.0), rng.uniform(0, 2.0)]


def test_connection_errors_are_retried() -> None:
    async def cut(reply: Reply) -> None:
        reply.close()  # the connection drops before any answer

    result, requests, fake = listing([cut, cut, ok])
    assert isinstance(result, list) and len(requests) == 3 and len(fake.slept) == 2


def test_persistent_failure_gives_up_within_one_deadline() -> None:
    result, requests, fake = listing([status(500)], deadline=30.0)
    assert isinstance(result, ListingError)
    assert result.transport is Transport.provider_error
    assert result.attempts == len(requests) > 3
    assert sum(fake.slept) < 30.0 and fake.now - 1000.0 < 30.0
    assert "gave up after" in str(result) and "HTTP 500" in str(result) and KEY not in str(result)


def test_a_retry_after_beyond_the_deadline_gives_up_at_once() -> None:
    result, requests, fake = listing([status(429, {"Retry-After": "120"})], deadline=30.0)
    assert isinstance(result, ListingError) and result.transport is Transport.rate_limited
    assert len(requests) == 1 and fake.slept == []
    assert "Retry-After 120 s" in str(result)


@pytest.mark.parametrize(
    ("code", "transport"),
    [
        (401, Transport.auth_config),
        (403, Transport.auth_config),
        (404, Transport.auth_config),
        (400, Transport.bad_request),
    ],
)
def test_our_own_problems_are_not_retried(code: int, transport: Transport) -> None:
    result, requests, fake = listing([status(code)])
    assert isinstance(result, ListingError) and result.transport is transport
    assert len(requests) == 1 and fake.slept == [] and result.attempts == 1
    assert f"HTTP {code}" in str(result) and KEY not in str(result)


def test_a_body_that_is_not_a_listing_is_retried_then_reported() -> None:
    def html(reply: Reply) -> Awaitable[None]:
        return reply.send(200, b"<html><title>Maintenance</title></html>", "text/html")

    def empty(reply: Reply) -> Awaitable[None]:
        return reply.send_json(200, {"data": {"id": "acme/m"}})

    result, requests, _ = listing([html, empty], deadline=3.0)
    assert isinstance(result, ListingError) and result.transport is Transport.provider_error
    assert "data.endpoints" in str(result) and len(requests) > 2


def test_a_hung_listing_ends_at_the_deadline() -> None:
    async def hang(reply: Reply) -> None:
        await reply.hang()

    async def go() -> ListingError:
        async with WireServer(lambda request, reply: hang(reply)) as server:
            async with OpenRouterClient(server.base_url, KEY, listing_deadline_s=0.2) as client:
                with pytest.raises(ListingError) as info:
                    await client.list_endpoints("acme/m")
                return info.value

    error = run(go())
    assert error.transport is Transport.timeout and KEY not in str(error)


def test_listing_error_is_a_runtime_error_naming_the_model() -> None:
    error = ListingError("acme/m", Transport.timeout, "deadline")
    assert isinstance(error, RuntimeError)
    assert str(error) == "listing endpoints of acme/m failed (timeout): deadline"


class _NoJitter(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return a


def test_connections_refused_until_the_deadline_runs_out_mid_attempt_never_reached_openrouter() -> (
    None
):
    """A listing whose last attempt is cut by the deadline (a loaded machine) after every earlier
    attempt was refused a connection never reached OpenRouter: the round reports it unreachable,
    not as a provider's timeout."""
    ticks = iter(range(1000))

    def clock() -> (
        float
    ):  # every reading is 0.4 s later: the second attempt starts past the deadline
        return next(ticks) * 0.4

    async def sleep(_: float) -> None:
        return None

    async def go() -> ListingError:
        async with WireServer(lambda request, reply: reply.hang()) as server:
            nowhere = server.base_url
        async with OpenRouterClient(
            nowhere, KEY, clock=clock, sleep=sleep, rng=_NoJitter(), listing_deadline_s=1.0
        ) as client:
            with pytest.raises(ListingError) as info:
                await client.list_endpoints("acme/m")
            return info.value

    error = run(go())
    assert error.transport is Transport.timeout and error.attempts == 2
    assert error.connected is False
