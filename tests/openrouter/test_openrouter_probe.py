"""probe() against a real loopback HTTP server that replays bytes and misbehaves on demand."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from shared_data import CAPTURES
from structlog.testing import capture_logs
from wire_server import FIXTURES, Reply, Request, WireServer, chunk, run, sse, usage_chunk

from canary.core.model import Contract, Endpoint, Observation, Pricing, Transport
from canary.openrouter.client import Completion, OpenRouterClient, pin_provider
from canary.service.logs import configure_logging


@pytest.fixture(autouse=True)
def _logging_set_up() -> None:
    """canary's logging is set up first, so capture_logs sees what the first line logged (a
    logger's first line would otherwise set it up inside the capture, replacing it)."""
    configure_logging()


KEY = "sk-or-v1-test-secret-0123456789"
ENDPOINT = Endpoint(
    model="acme/m", tag="deepinfra/fp8", provider_name="DeepInfra", pricing=Pricing(1e-7, 2e-7)
)
BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 64}


class ScriptedClock:
    """Returns the scripted times one call after another (then keeps the last). The client reads
    the clock when the call starts, when the request headers go on the wire, once per event and
    at the end: event i arrives at times[i + 2]."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.times.pop(0) if len(self.times) > 1 else self.times[0]


def probe(
    handler: Callable[[Request, Reply], Awaitable[None]],
    body: dict[str, Any] | None = None,
    endpoint: Endpoint = ENDPOINT,
    **client_kwargs: Any,
) -> tuple[Observation, list[Request]]:
    async def go() -> tuple[Observation, list[Request]]:
        async with WireServer(handler) as server:
            async with OpenRouterClient(server.base_url, KEY, **client_kwargs) as client:
                obs = await client.probe(
                    endpoint,
                    body or BODY,
                    contract=Contract.refusal,
                    language="pt",
                    attempt=2,
                    checksum="c1",
                    nonce="n1",
                )
            return obs, server.requests

    return run(go())


def streaming(
    body: bytes, size: int = 7, headers: dict[str, str] | None = None
) -> Callable[[Request, Reply], Awaitable[None]]:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream", **(headers or {})})
        await reply.pieces(body, size)
        await reply.end()

    return handler


def answering(
    status: int,
    body: bytes,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> Callable[[Request, Reply], Awaitable[None]]:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.send(status, body, content_type, headers)

    return handler


HEALTHY = sse(
    chunk(""), chunk("Olá, "), chunk("tudo bem?"), chunk("", finish="stop"), usage_chunk()
)


def test_healthy_stream_is_observed_completely() -> None:
    obs, _ = probe(streaming(HEALTHY))
    assert obs.transport is Transport.ok and obs.completed
    assert (
        obs.content == "Olá, tudo bem?"
        and obs.finish_reason == "stop"
        and obs.native_finish_reason == "stop"
    )
    assert obs.status == 200 and obs.error is None
    assert obs.served_by == "DeepInfra" and obs.attribution_ok
    assert (
        obs.usage.prompt_tokens == 10
        and obs.usage.completion_tokens == 5
        and obs.usage.cost_usd == 0.0001
    )
    assert (obs.contract, obs.tag, obs.language, obs.attempt, obs.checksum, obs.nonce) == (
        Contract.refusal,
        "deepinfra/fp8",
        "pt",
        2,
        "c1",
        "n1",
    )


def test_request_pins_the_endpoint_and_keeps_the_callers_body() -> None:
    body = {**BODY, "provider": {"data_collection": "deny", "only": ["other"]}}
    _, requests = probe(streaming(HEALTHY), body=body)
    (request,) = requests
    sent = request.json()
    assert request.method == "POST" and request.path == "/api/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert sent["model"] == "acme/m" and sent["stream"] is True
    assert sent["messages"] == BODY["messages"] and sent["max_tokens"] == 64
    assert sent["provider"] == {"data_collection": "deny", **pin_provider("deepinfra/fp8", False)}
    assert (
        sent["provider"]["only"] == ["deepinfra/fp8"]
        and sent["provider"]["allow_fallbacks"] is False
    )


@pytest.mark.parametrize(
    ("extra", "required"),
    [
        ({"response_format": {"type": "json_object"}}, True),
        ({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"}, True),
        ({"seed": 7}, True),
        ({"temperature": 0.7}, False),
        ({}, False),
    ],
)
def test_require_parameters_follows_the_optional_parameters_sent(
    extra: dict[str, Any], required: bool
) -> None:
    _, (request,) = probe(streaming(HEALTHY), body={**BODY, **extra})
    assert request.json()["provider"]["require_parameters"] is required


def test_ttft_and_reasoning_are_measured_from_the_send_with_the_injected_clock() -> None:
    body = sse(
        chunk("", reasoning="thinking"),
        chunk(""),
        chunk("Olá"),
        chunk("", finish="stop"),
        usage_chunk(),
    )
    # call at 98 (connecting takes 2 s), request sent at 100; events at 101 (reasoning),
    # 102 (empty content), 112.5 (first content), 113, 114, [DONE] 115; the end at 116.
    clock = ScriptedClock(98.0, 100.0, 101.0, 102.0, 112.5, 113.0, 114.0, 115.0, 116.0)
    obs, _ = probe(streaming(body, size=3), clock=clock)
    assert clock.calls == 9
    assert obs.reasoning_s == pytest.approx(1.0)
    # Slow, but under first_token_timeout_s: measured, not cut; counted from the send.
    assert obs.ttft_s == pytest.approx(12.5)
    assert obs.total_s == pytest.approx(18.0)  # the whole call, connecting included
    assert obs.transport is Transport.ok


def test_tool_call_fixture_replayed_over_the_wire() -> None:
    path = FIXTURES / "stream" / "chatlas_gpt-4o-mini_tool-call-delta.sse"
    if not path.exists():
        pytest.skip(CAPTURES.reason)
    openai = Endpoint(
        model="openai/gpt-4o-mini", tag="openai", provider_name="OpenAI", pricing=Pricing(0, 0)
    )
    obs, _ = probe(streaming(path.read_bytes(), size=5), endpoint=openai)
    assert obs.completed and obs.finish_reason == "tool_calls"
    (call,) = obs.tool_calls
    assert (
        call.name == "get_date"
        and call.arguments == "{}"
        and call.id == "call_eJmyO5ANyXc20sPeLSuWSngc"
    )


def test_crlf_stream_with_leading_whitespace_reads_the_same() -> None:
    body = b"\n         \n" + HEALTHY.replace(b"\n", b"\r\n")
    obs, _ = probe(streaming(body, size=4))
    assert obs.transport is Transport.ok and obs.content == "Olá, tudo bem?"


def test_attribution_mismatch_is_flagged_and_logged_loudly() -> None:
    body = sse(
        chunk("Olá", provider="Google"),
        chunk("", finish="stop", provider="Google"),
        usage_chunk(provider="Google"),
    )
    with capture_logs() as logs:
        obs, _ = probe(streaming(body))
    assert obs.transport is Transport.ok and not obs.attribution_ok and not obs.completed
    assert obs.served_by == "Google"
    (warning,) = [e for e in logs if e["event"] == "attribution_mismatch"]
    assert warning["log_level"] == "warning" and warning["expected"] == "DeepInfra"
    assert warning["served_by"] == "Google" and warning["tag"] == "deepinfra/fp8"


def test_provider_name_matches_case_insensitively() -> None:
    body = sse(chunk("Olá", provider="deepinfra"), chunk("", finish="stop", provider="DEEPINFRA"))
    obs, _ = probe(streaming(body))
    assert obs.attribution_ok and obs.served_by == "deepinfra"


@pytest.mark.parametrize(
    ("status", "payload", "transport", "fragment"),
    [
        (
            429,
            {"error": {"code": 429, "message": "Rate limit exceeded"}},
            Transport.rate_limited,
            "Rate limit",
        ),
        (
            404,
            {"error": {"code": 404, "message": "No endpoints found for acme/m."}},
            Transport.unroutable,
            "No endpoints",
        ),
        (
            503,
            {
                "error": {
                    "code": 503,
                    "message": "No provider available that meets your routing requirements",
                }
            },
            Transport.unroutable,
            "routing",
        ),
        (
            503,
            {"error": {"code": 503, "message": "Provider overloaded"}},
            Transport.provider_error,
            "overloaded",
        ),
        (
            401,
            {"error": {"code": 401, "message": "No auth credentials found"}},
            Transport.auth_config,
            "auth",
        ),
        (
            402,
            {"error": {"code": 402, "message": "Insufficient credits"}},
            Transport.auth_config,
            "credits",
        ),
        (
            403,
            {"error": {"code": 403, "message": "Key not allowed"}},
            Transport.auth_config,
            "allowed",
        ),
        (
            400,
            {"error": {"code": 400, "message": "invalid response_format"}},
            Transport.bad_request,
            "invalid",
        ),
        (524, {"error": {"code": 524, "message": "timed out"}}, Transport.timeout, "timed out"),
    ],
)
def test_http_errors_are_classified_with_their_message(
    status: int, payload: dict[str, Any], transport: Transport, fragment: str
) -> None:
    raw = b"\n      \n" + json.dumps(payload).encode()  # error bodies may start with whitespace
    obs, _ = probe(answering(status, raw))
    assert obs.transport is transport and obs.status == status and not obs.completed
    assert obs.error is not None and f"HTTP {status}" in obs.error and fragment in obs.error


def test_operator_problems_are_logged_as_warnings() -> None:
    with capture_logs() as logs:
        probe(answering(401, b'{"error":{"code":401,"message":"No auth credentials found"}}'))
    (entry,) = [e for e in logs if e["event"] == "probe_transport_error"]
    assert entry["log_level"] == "warning" and entry["transport"] == "auth_config"


def test_html_error_page_is_a_provider_error_named_by_its_title() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>"
    obs, _ = probe(answering(502, page, "text/html"))
    assert obs.transport is Transport.provider_error and obs.status == 502
    assert obs.error is not None and "502 Bad Gateway" in obs.error and "text/html" in obs.error


def test_a_body_that_echoes_the_key_never_leaks_it() -> None:
    page = f"<html><title>Oops</title>Authorization: Bearer {KEY} and {KEY}</html>".encode()
    obs, _ = probe(answering(500, page, "text/plain"))
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and KEY not in obs.error and "Oops" in obs.error


def test_wrong_content_type_with_200_is_a_provider_error() -> None:
    obs, _ = probe(answering(200, b"<html><title>Welcome</title></html>", "text/html"))
    assert obs.transport is Transport.provider_error and obs.status == 200
    assert obs.error is not None and "wrong content type" in obs.error and "text/html" in obs.error


def test_an_error_inside_a_200_json_body_is_classified_by_its_code() -> None:
    error = {"code": 429, "message": "Provider returned error"}
    error["metadata"] = {"provider_name": "DeepInfra", "raw": "slow down"}
    obs, _ = probe(answering(200, json.dumps({"error": error}).encode()))
    assert obs.transport is Transport.rate_limited
    assert obs.error is not None and "slow down" in obs.error and obs.served_by == "DeepInfra"


def test_midstream_error_chunk_is_a_provider_error() -> None:
    error_chunk = chunk(
        "",
        finish="error",
        error={
            "code": 502,
            "message": "Upstream died",
            "metadata": {"error_type": "provider_unavailable"},
        },
    )
    obs, _ = probe(streaming(sse(chunk("Olá"), error_chunk, done=False)))
    assert obs.transport is Transport.provider_error and obs.status == 200
    assert obs.error is not None and "Upstream died" in obs.error
    assert obs.content == "Olá" and obs.finish_reason == "error"


def test_midstream_error_fixture_replayed_over_the_wire() -> None:
    path = FIXTURES / "stream" / "pydantic-ai_minimax-m2-free_midstream-error.sse"
    if not path.exists():
        pytest.skip(CAPTURES.reason)
    minimax = Endpoint(
        model="minimax/minimax-m2:free",
        tag="minimax",
        provider_name="Minimax",
        pricing=Pricing(0, 0),
    )
    obs, _ = probe(streaming(path.read_bytes(), size=11), endpoint=minimax)
    assert obs.transport is Transport.provider_error and obs.error is not None
    assert "Token limit reached" in obs.error and obs.reasoning_s is not None and obs.ttft_s is None


def test_clean_end_without_done_or_finish_reason_is_a_truncated_stream() -> None:
    obs, _ = probe(streaming(sse(chunk("Olá, "), chunk("tudo"), done=False)))
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and "truncated stream" in obs.error and obs.content == "Olá, tudo"


def test_connection_cut_mid_body_is_a_truncated_stream() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        await reply.piece(sse(chunk("Olá"), done=False) + b'data: {"id": "gen-1", "cho')
        reply.close()

    obs, _ = probe(handler)
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and "truncated stream" in obs.error and obs.content == "Olá"


def test_malformed_event_json_is_a_provider_error_not_a_crash() -> None:
    obs, _ = probe(streaming(sse(chunk("Olá"), "data: {not json\n\n", chunk("", finish="stop"))))
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and "malformed event" in obs.error


def test_a_huge_stream_is_cut_at_the_size_limit() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        for _ in range(64):
            await reply.piece(sse(chunk("x" * 4000), done=False, keepalive=False))
        await reply.piece(sse(chunk("", finish="stop")))
        await reply.end()

    obs, _ = probe(handler, max_stream_bytes=64 * 1024)
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and "larger than 65536 bytes" in obs.error


def test_a_huge_error_body_is_read_only_in_part() -> None:
    obs, _ = probe(answering(500, b"<html>" + b"x" * (2 * 1024 * 1024) + b"</html>", "text/html"))
    assert (
        obs.transport is Transport.provider_error and obs.error is not None and len(obs.error) < 400
    )


def test_no_answer_at_all_times_out_on_the_first_token_deadline() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.hang()

    obs, _ = probe(handler, first_token_timeout_s=0.2)
    assert obs.transport is Transport.timeout and obs.status is None
    assert obs.error == "no answer within 0.2 s (the stream never opened)"
    assert obs.ttft_s is None and not obs.ttft_censored  # not reached: a transport error only


def test_keepalives_alone_do_not_count_as_a_first_token() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        await reply.piece(
            b": OPENROUTER PROCESSING\n\n" * 3 + sse(chunk(""), done=False, keepalive=False)
        )
        await reply.hang()

    obs, _ = probe(handler, first_token_timeout_s=0.2)
    assert obs.transport is Transport.timeout and obs.status == 200
    assert obs.error == "stalled: the stream opened but sent no token within 0.2 s"
    # reached and slow: one ttft sample, censored at the timeout
    assert obs.ttft_censored and obs.ttft_s == 0.2


def test_an_error_chunk_before_the_first_token_stays_a_transport_error() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        error = {"code": 502, "message": "Provider returned error"}
        await reply.piece(sse(chunk("", finish="error", error=error), done=False))
        await reply.hang()

    obs, _ = probe(handler, first_token_timeout_s=0.2)
    assert obs.transport is Transport.provider_error and obs.status == 200
    assert obs.error == "mid-stream error, code 502: Provider returned error"
    assert not obs.ttft_censored and obs.ttft_s is None


@pytest.mark.parametrize(
    "first",
    [
        chunk(None, reasoning="Let me think."),
        {
            **chunk(None),
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}
                        ],
                    },
                    "finish_reason": None,
                }
            ],
        },
    ],
    ids=["reasoning", "tool-call"],
)
def test_a_reasoning_or_tool_call_delta_is_a_token_not_a_stall(first: dict[str, Any]) -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        await reply.piece(sse(first, done=False))
        await reply.hang()

    obs, _ = probe(handler, first_token_timeout_s=0.2, stream_timeout_s=0.4)
    assert obs.transport is Transport.timeout
    assert obs.error == "stream not finished within 0.4 s"
    assert not obs.ttft_censored


def test_a_stall_after_the_first_token_times_out_on_the_stream_deadline() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.head(200, {"Content-Type": "text/event-stream"})
        await reply.piece(sse(chunk("Olá"), done=False))
        await reply.hang()

    # The first-token deadline is longer than the stream's: the stream deadline (0.3 s) decides.
    obs, _ = probe(handler, first_token_timeout_s=5.0, stream_timeout_s=0.3)
    assert obs.transport is Transport.timeout
    assert obs.error == "stream not finished within 0.3 s"
    assert obs.content == "Olá" and obs.ttft_s is not None
    assert not obs.ttft_censored  # a token came: the stream timed out, nothing was censored


def test_a_stream_deadline_shorter_than_the_first_token_deadline_still_bounds_silence() -> None:
    async def handler(request: Request, reply: Reply) -> None:
        await reply.hang()

    obs, _ = probe(handler, first_token_timeout_s=5.0, stream_timeout_s=0.2)
    assert obs.transport is Transport.timeout
    assert obs.error == "stream not finished within 0.2 s (no token)"


def test_connection_refused_is_a_provider_error() -> None:
    async def go() -> Observation:
        async with WireServer(answering(200, b"")) as server:
            url = server.base_url
        async with OpenRouterClient(url, KEY) as client:  # the server is gone: nothing listens
            return await client.probe(ENDPOINT, BODY, contract=Contract.ttft)

    obs = run(go())
    assert obs.transport is Transport.provider_error and obs.status is None
    assert obs.error is not None and obs.error.startswith("connect_error") and KEY not in obs.error


def test_the_key_is_in_no_log_line() -> None:
    with capture_logs() as logs:
        probe(answering(401, b'{"error":{"code":401,"message":"bad key"}}'))
        probe(streaming(sse(chunk("x", provider="Other"), chunk("", finish="stop"))))
    assert logs and KEY not in repr(logs)


def test_the_connection_is_reused_after_a_complete_stream() -> None:
    async def go() -> tuple[list[Observation], int]:
        async with WireServer(streaming(HEALTHY)) as server:
            async with OpenRouterClient(server.base_url, KEY) as client:
                observations = [
                    await client.probe(ENDPOINT, BODY, contract=Contract.ttft) for _ in range(3)
                ]
            return observations, server.connections

    observations, connections = run(go())
    assert all(o.transport is Transport.ok for o in observations)
    assert connections == 1


def test_a_last_event_cut_before_its_blank_line_is_still_read() -> None:
    body = sse(chunk("Olá"), done=False) + b'data: {"choices":[{"index":0,"delta":{},'
    body += b'"finish_reason":"stop"}]}\n'  # the body ends without the blank line
    obs, _ = probe(streaming(body, size=5))
    assert obs.transport is Transport.ok and obs.finish_reason == "stop"
    assert obs.content == "Olá"


def test_max_connections_probes_run_at_once_across_the_clients_pools() -> None:
    """The probes spread over several small pools; together they still hold max_connections
    requests at once (the server answers none until all have arrived)."""
    arrived: list[int] = []
    everyone = asyncio.Event()

    async def handler(request: Request, reply: Reply) -> None:
        arrived.append(1)
        if len(arrived) == 20:
            everyone.set()
        await everyone.wait()
        await streaming(HEALTHY)(request, reply)

    async def go() -> list[Observation]:
        async with WireServer(handler) as server:
            async with OpenRouterClient(
                server.base_url, KEY, max_connections=20, first_token_timeout_s=10
            ) as client:
                return await asyncio.gather(
                    *(client.probe(ENDPOINT, BODY, contract=Contract.ttft) for _ in range(20))
                )

    observations = run(go())
    assert [o.transport for o in observations] == [Transport.ok] * 20


def test_an_equality_sample_names_no_contract_and_keeps_only_a_completed_answer() -> None:
    """client.sample: the same pinned request as a probe, with no contract to label it; its
    text only when the answer completed from the pinned provider, its usage either way."""
    misattributed = sse(
        chunk("Olá", provider="Google"),
        chunk("", finish="stop", provider="Google"),
        usage_chunk(provider="Google"),
    )

    async def go(body: bytes) -> tuple[Completion, list[Request]]:
        async with WireServer(streaming(body)) as server:
            async with OpenRouterClient(server.base_url, KEY) as client:
                return await client.sample(ENDPOINT, BODY), server.requests

    healthy, requests = run(go(HEALTHY))
    assert healthy.content == "Olá, tudo bem?" and healthy.usage.completion_tokens == 5
    assert json.loads(requests[0].body)["provider"]["only"] == [ENDPOINT.tag]
    other, _ = run(go(misattributed))
    assert other.content is None and other.usage.completion_tokens == 5
