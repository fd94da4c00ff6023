"""Every real OpenRouter capture under ../shared/fixtures/openrouter goes through our parsers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shared_data import CAPTURES
from wire_server import FIXTURES

from canary.core.classify import classify_status
from canary.core.model import Transport
from canary.openrouter.endpoints import parse_endpoints
from canary.openrouter.sse import SSEEvent, SSEParser
from canary.openrouter.stream import StreamAssembler, StreamOutcome


def parse_all(body: bytes) -> list[SSEEvent]:
    """A complete body parsed at once."""
    parser = SSEParser()
    return parser.feed(body) + parser.close()


pytestmark = pytest.mark.skipif(not CAPTURES.present, reason=CAPTURES.reason)


def files(kind: str, pattern: str = "*") -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted((FIXTURES / kind).rglob(pattern))


def assemble(body: bytes) -> StreamOutcome:
    assembler = StreamAssembler()
    for i, event in enumerate(parse_all(body)):
        assembler.feed(event.data, float(i))
    return assembler.finish()


# name fragment -> (transport, expected content start or None, served_by)
STREAMS: dict[str, tuple[Transport, str | None, str | None]] = {
    "chatlas_gpt-4o-mini_no-keepalive": (Transport.ok, None, "OpenAI"),
    "chatlas_gpt-4o-mini_tool-call-delta": (Transport.ok, None, "OpenAI"),
    "llm-openrouter_gpt-4.1-mini_tool-call": (Transport.ok, None, "OpenAI"),
    "llm-openrouter_gpt-4o_2024-11": (Transport.ok, None, "OpenAI"),
    "llm-openrouter_gpt-5-nano_responses-api": (Transport.ok, None, None),
    "openai-go-issue-227": (Transport.provider_error, "亚", "OpenAI"),
    "pydantic-ai_claude-sonnet-4.5-via-google": (Transport.ok, None, "Google"),
    "pydantic-ai_claude-sonnet-4.6-bedrock": (Transport.ok, None, "Amazon Bedrock"),
    "pydantic-ai_deepseek-chat_web-search": (Transport.ok, None, "OpenAI"),
    "pydantic-ai_gpt-4o-mini_advisor-tool": (Transport.ok, None, None),
    "pydantic-ai_minimax-m2-free_midstream-error": (Transport.provider_error, None, "Minimax"),
    "pydantic-ai_o3_encrypted-reasoning": (Transport.ok, None, None),
}


def expectation(path: Path) -> tuple[Transport, str | None, str | None]:
    for fragment, expected in STREAMS.items():
        if path.name.startswith(fragment):
            return expected
    raise AssertionError(f"no expectation written for fixture {path.name}")


@pytest.mark.parametrize("path", files("stream", "*.sse"), ids=lambda p: p.name)
def test_every_stream_fixture_assembles(path: Path) -> None:
    transport, content_start, served_by = expectation(path)
    outcome = assemble(path.read_bytes())
    assert outcome.transport is transport, outcome.error
    if content_start is not None:
        assert outcome.content.startswith(content_start)
    if served_by is not None:
        assert outcome.served_by == served_by
    if "responses-api" not in path.name and "partial" not in path.name:
        assert outcome.done


@pytest.mark.parametrize("path", files("stream", "*.sse"), ids=lambda p: p.name)
def test_stream_fixtures_parse_the_same_in_any_chunking_and_with_crlf(path: Path) -> None:
    body = path.read_bytes()
    whole = parse_all(body)
    for size in (1, 7, 64):
        parser = SSEParser()
        events = [e for i in range(0, len(body), size) for e in parser.feed(body[i : i + size])]
        assert events + parser.close() == whole
    assert parse_all(body.replace(b"\n", b"\r\n")) == whole


def by_name(fragment: str) -> bytes:
    (path,) = [p for p in files("stream") if fragment in p.name]
    return path.read_bytes()


def test_chat_stream_content_finish_and_usage() -> None:
    outcome = assemble(by_name("chatlas_gpt-4o-mini_no-keepalive"))
    assert outcome.content and outcome.finish_reason == "stop"
    assert outcome.native_finish_reason == "stop"
    assert outcome.usage.prompt_tokens and outcome.usage.completion_tokens
    assert outcome.ttft_s is not None and outcome.reasoning_s is None


def test_oldest_stream_shape_has_no_native_finish_reason() -> None:
    outcome = assemble(by_name("llm-openrouter_gpt-4o_2024-11"))
    assert outcome.finish_reason == "stop" and outcome.native_finish_reason is None
    assert outcome.usage.cost_usd is None and outcome.usage.prompt_tokens is not None


def test_tool_call_deltas_are_reassembled() -> None:
    outcome = assemble(by_name("chatlas_gpt-4o-mini_tool-call-delta"))
    (call,) = outcome.tool_calls
    assert (call.index, call.id, call.name, call.arguments) == (
        0,
        "call_eJmyO5ANyXc20sPeLSuWSngc",
        "get_date",
        "{}",
    )
    assert outcome.finish_reason == "tool_calls" and outcome.content == ""
    assert outcome.usage.cost_usd == pytest.approx(0.00001545)
    outcome = assemble(by_name("llm-openrouter_gpt-4.1-mini_tool-call"))
    assert outcome.tool_calls and all(
        json.loads(c.arguments) is not None for c in outcome.tool_calls
    )


def test_reasoning_arrives_before_content() -> None:
    outcome = assemble(by_name("pydantic-ai_claude-sonnet-4.5-via-google"))
    assert outcome.reasoning_s is not None and outcome.ttft_s is not None
    assert outcome.reasoning_s < outcome.ttft_s
    o3 = assemble(by_name("pydantic-ai_o3_encrypted-reasoning"))
    assert o3.native_finish_reason == "completed" and o3.finish_reason == "stop"


def test_midstream_error_chunk_is_a_provider_error_with_its_message() -> None:
    outcome = assemble(by_name("minimax-m2-free_midstream-error"))
    assert outcome.transport is Transport.provider_error
    assert outcome.error is not None and "Token limit reached" in outcome.error
    assert outcome.reasoning_s is not None and outcome.ttft_s is None


def test_partial_capture_without_done_is_a_truncated_stream() -> None:
    outcome = assemble(by_name("openai-go-issue-227"))
    assert outcome.error is not None and "truncated" in outcome.error


def test_payload_only_fragment_reads_through_the_chunk_code() -> None:
    (path,) = files("stream", "*.txt")
    assembler = StreamAssembler()
    for line in path.read_text().splitlines():
        if line.strip():
            assembler.feed(line, 0.0)
    outcome = assembler.finish()
    assert outcome.transport is Transport.ok  # finish_reason without [DONE] is tolerated
    assert outcome.finish_reason == "stop" and outcome.usage.prompt_tokens == 1697


ENDPOINTS: dict[str, tuple[int, set[str]]] = {
    "ploke_deepseek-chat-v3.1": (11, {"deepseek", "siliconflow/fp8", "deepinfra/fp4", "chutes"}),
    "roo-code_gemini-2.5-pro-preview_2025-05-12": (2, {"google", "google-ai-studio"}),
    "roo-code_gemini-2.5-pro-preview_2025-05-23": (2, {"google-vertex", "google-ai-studio"}),
    "moonshotai-kimi-k3": (4, {"fireworks", "fireworks/fast", "alibaba", "morph/fast"}),
}


@pytest.mark.parametrize("path", files("endpoints", "*.json"), ids=lambda p: p.name)
def test_every_endpoints_fixture_parses(path: Path) -> None:
    payload = json.loads(path.read_text())
    (count, some_tags) = next(v for k, v in ENDPOINTS.items() if path.name.startswith(k))
    endpoints = parse_endpoints("acme/m", payload)
    tags = [e.tag for e in endpoints]
    assert len(endpoints) == count and len(set(tags)) == count and tags == sorted(tags)
    assert some_tags <= set(tags)
    for e in endpoints:
        assert e.model == "acme/m" and e.provider_name
        assert isinstance(e.pricing.prompt, float) and e.pricing.prompt > 0
        assert e.raw["provider_name"] == e.provider_name


def test_endpoint_fields_are_converted() -> None:
    payload = json.loads(
        (
            FIXTURES / "endpoints/uncertain/moonshotai-kimi-k3_reduced-4-of-14_2026-08-25.json"
        ).read_text()
    )
    endpoints = {e.tag: e for e in parse_endpoints("moonshotai/kimi-k3", payload)}
    alibaba = endpoints["alibaba"]
    assert alibaba.status == -2 and alibaba.quantization == "unknown"
    assert alibaba.pricing.prompt == pytest.approx(0.00000345)
    assert alibaba.latency_last_30m is not None and alibaba.latency_last_30m["p50"] == 9250.0
    assert alibaba.max_completion_tokens == 1048576
    assert endpoints["fireworks"].max_completion_tokens is None
    assert endpoints["fireworks/fast"].provider_name == "Fireworks"


def test_duplicate_tags_collapse_independently_of_listing_order_and_health() -> None:
    payload = json.loads(
        (FIXTURES / "endpoints/ploke_deepseek-chat-v3.1_2025-08-30.json").read_text()
    )
    forward = {e.tag: e for e in parse_endpoints("deepseek/deepseek-chat-v3.1", payload)}
    entries: list[dict[str, Any]] = payload["data"]["endpoints"]
    flipped = [dict(e) for e in reversed(entries)]
    for e in flipped:
        e["uptime_last_30m"] = 1.0  # volatile health figures do not take part in the choice
    backward = {e.tag: e for e in parse_endpoints("m", {"data": {"endpoints": flipped}})}
    assert forward["deepseek"].max_completion_tokens == backward["deepseek"].max_completion_tokens
    assert forward["deepseek"].max_completion_tokens in (8192, 64000)


@pytest.mark.parametrize("path", files("error", "*.json"), ids=lambda p: p.name)
def test_every_error_fixture_classifies(path: Path) -> None:
    raw = path.read_bytes()
    body = json.loads(raw)
    code = body["error"]["code"]
    status = 200 if "inside-http-200" in path.name else code
    expected = {400: Transport.bad_request, 404: Transport.unroutable, 429: Transport.rate_limited}[
        code
    ]
    assert classify_status(status, body) is expected


def test_leading_whitespace_completion_fixtures_really_start_with_whitespace() -> None:
    leading = [p for p in files("completion") if "leading-whitespace" in p.name]
    assert leading and all(p.read_bytes()[:1] == b"\n" for p in leading)
