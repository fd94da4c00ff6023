"""The chunk-handling rules of StreamAssembler, one behaviour per test."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples
from wire_server import chunk, usage_chunk

from canary.core.model import Transport
from canary.openrouter.sse import SSEParser
from canary.openrouter.stream import StreamAssembler, StreamOutcome


def run_chunks(*items: dict[str, Any] | str, done: bool = True) -> StreamOutcome:
    assembler = StreamAssembler()
    for i, item in enumerate(items):
        assembler.feed(item if isinstance(item, str) else json.dumps(item), float(i + 1))
    if done:
        assembler.feed("[DONE]", float(len(items) + 1))
    return assembler.finish()


def tool_delta(index: int | None, **function: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"function": function}
    if index is not None:
        part["index"] = index
    c = chunk(None)
    c["choices"][0]["delta"]["tool_calls"] = [part]
    return c


def test_content_is_concatenated_and_ttft_is_the_first_non_empty_delta() -> None:
    outcome = run_chunks(chunk(""), chunk(None), chunk("a"), chunk("b"), chunk("", finish="stop"))
    assert outcome.content == "ab" and outcome.ttft_s == 3.0 and outcome.transport is Transport.ok


def test_last_non_null_finish_reasons_win() -> None:
    first = chunk("", finish="length")
    last = chunk("")
    last["choices"][0]["native_finish_reason"] = "max_tokens"
    outcome = run_chunks(chunk("x"), first, last)
    assert outcome.finish_reason == "length" and outcome.native_finish_reason == "max_tokens"


def test_reasoning_details_alone_count_as_a_reasoning_delta_but_empty_lists_do_not() -> None:
    empty = chunk("")
    empty["choices"][0]["delta"]["reasoning_details"] = []
    detail = chunk("")
    detail["choices"][0]["delta"]["reasoning_details"] = [{"type": "reasoning.encrypted"}]
    outcome = run_chunks(empty, detail, chunk("x", finish="stop"))
    assert outcome.reasoning_s == 2.0 and outcome.first_token_s == 2.0 and outcome.ttft_s == 3.0


def test_tool_call_fragments_join_by_index_and_the_first_name_wins() -> None:
    outcome = run_chunks(
        tool_delta(1, name="second", arguments='{"b"'),
        tool_delta(0, name="first", arguments="{"),
        tool_delta(0, name="first", arguments="}"),  # a host that repeats the name
        tool_delta(1, arguments=": 2}"),
        chunk("", finish="tool_calls"),
    )
    assert [(c.index, c.name, c.arguments) for c in outcome.tool_calls] == [
        (0, "first", "{}"),
        (1, "second", '{"b": 2}'),
    ]


def test_tool_call_without_index_uses_its_position_and_parsed_arguments_are_serialised() -> None:
    outcome = run_chunks(
        tool_delta(None, name="f", arguments={"x": 1}), chunk("", finish="tool_calls")
    )
    (call,) = outcome.tool_calls
    assert (call.index, call.name, json.loads(call.arguments)) == (0, "f", {"x": 1})


def test_usage_is_read_from_the_usage_chunk() -> None:
    outcome = run_chunks(chunk("x", finish="stop"), usage_chunk(prompt=7, completion=3, cost=0.5))
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (7, 3)
    assert outcome.usage.cost_usd == 0.5


def test_every_distinct_provider_is_kept_in_order() -> None:
    outcome = run_chunks(
        chunk("x", provider="A"), chunk("y", provider="B"), chunk("", provider="A")
    )
    assert outcome.served_by == "A" and outcome.providers == ("A", "B")


def test_choice_level_error_and_finish_reason_error_are_provider_errors() -> None:
    failing = chunk("")
    failing["choices"][0]["error"] = {"code": 502, "message": "boom"}
    outcome = run_chunks(chunk("x"), failing)
    assert outcome.transport is Transport.provider_error and "boom" in (outcome.error or "")
    outcome = run_chunks(chunk("x"), chunk("", finish="error"))
    assert outcome.transport is Transport.provider_error and "finish_reason error" in (
        outcome.error or ""
    )


def test_events_that_are_not_json_objects_are_malformed() -> None:
    for bad in ("{oops", "[1, 2]", "42", "[" * 100_000):
        outcome = run_chunks(chunk("x", finish="stop"), bad)
        assert outcome.transport is Transport.provider_error
        assert (outcome.error or "").startswith("malformed event #2")


def test_odd_but_valid_chunks_are_ignored_not_fatal() -> None:
    outcome = run_chunks(
        {"choices": "nope"},
        {"choices": [None, {"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [{"delta": "text"}]},
        chunk("ok", finish="stop"),
    )
    assert outcome.transport is Transport.ok and outcome.content == "ok"


def test_finish_reason_without_done_is_tolerated_but_neither_is_truncation() -> None:
    assert run_chunks(chunk("x", finish="stop"), done=False).transport is Transport.ok
    truncated = run_chunks(chunk("x"), done=False)
    assert truncated.transport is Transport.provider_error and "truncated" in (
        truncated.error or ""
    )


def test_first_error_is_kept() -> None:
    outcome = run_chunks(
        chunk("", error={"code": 502, "message": "first"}),
        chunk("", error={"code": 500, "message": "second"}),
    )
    assert "first" in (outcome.error or "") and "second" not in (outcome.error or "")


def sim_chunk(content: bytes, *, gen: str = "gen-1", tail: bytes = b"") -> bytes:
    """A content chunk as the simulator and OpenRouter write it, content as raw string bytes."""
    return (
        b'{"id":"' + gen.encode() + b'","object":"chat.completion.chunk","created":1,'
        b'"model":"acme/m","provider":"DeepInfra","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"' + content + b'"' + tail + b"},"
        b'"finish_reason":null,"native_finish_reason":null}]}'
    )


def tool_chunk(arguments: bytes, *, index: bytes = b"0", call: bytes = b"") -> bytes:
    """A tool call's fragment as OpenAI's hosts write it through OpenRouter."""
    return (
        b'{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4.1-mini",'
        b'"object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":'
        b'{"role":"assistant","content":null,"tool_calls":[{"index":' + index + call
        + b',"function":{"arguments":"' + arguments + b'"},"type":"function"}]},'
        b'"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}'
    )  # fmt: skip


def read_text(*events: bytes) -> StreamOutcome:
    """Each event's data decoded as the SSE parser decodes it, then parsed."""
    assembler = StreamAssembler()
    for i, data in enumerate(events):
        assembler.feed(data.decode("utf-8", errors="replace"), float(i + 1))
    return assembler.finish()


def test_escapes_and_invalid_bytes_read_as_json_and_utf8_say() -> None:
    outcome = read_text(
        sim_chunk(b"Ol\\u00e1 "),
        sim_chunk(b'say \\"hi\\" '),
        sim_chunk(b"bad \xff"),
        tool_chunk(b'{\\"city\\": ', call=b',"id":"call_1"'),
        tool_chunk(b'\\"Lisbon\\"}'),
        b"[DONE]",
    )
    assert outcome.transport is Transport.ok
    assert outcome.content == 'Ol\u00e1 say "hi" bad \ufffd'
    (call,) = outcome.tool_calls
    assert (call.id, call.arguments) == ("call_1", '{"city": "Lisbon"}')


def test_a_raw_control_byte_in_a_string_is_a_malformed_event() -> None:
    outcome = read_text(sim_chunk(b"a"), sim_chunk(b"tab\there"), b"[DONE]")
    assert outcome.transport is Transport.provider_error
    assert (outcome.error or "").startswith("malformed event #2")


FIRST_CALL = tool_chunk(b"", call=b',"id":"call_1"')
ODD_EVENTS = [  # as on the wire: escapes, invalid UTF-8, other ids, finish, usage, a raw tab
    sim_chunk(b'say \\"hi\\"'),
    sim_chunk(b"line\\nbreak \\u00e9"),
    sim_chunk(b"bad \xff utf-8"),
    sim_chunk(b"a\tb"),
    sim_chunk(b""),
    sim_chunk(b"other id", gen="gen-2"),
    sim_chunk(b"with reasoning", tail=b',"reasoning":"hmm"'),
    sim_chunk(b"x").replace(b'"finish_reason":null', b'"finish_reason":"stop"'),
    sim_chunk(b"x")[:-1] + b',"usage":{"prompt_tokens":3,"completion_tokens":2}}',
    sim_chunk(b"\xc3\xa9t\xc3\xa9 \xe4\xba\x9a"),
    tool_chunk(b'{\\"city\\": '),
    tool_chunk(b"x", index=b"1", call=b',"id":"call_2"'),
]


def untimed(outcome: StreamOutcome) -> StreamOutcome:
    return replace(outcome, ttft_s=None, reasoning_s=None, first_token_s=None)


def read_in_pieces(body: bytes, cuts: list[int]) -> StreamOutcome:
    """The probes' path over a body cut into reads at ``cuts``: SSE parser, then the chunks."""
    parser, assembler = SSEParser(), StreamAssembler()
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        for event in parser.feed(body[start:end]):
            assembler.feed(event.data, 1.0)
    for event in parser.close():
        assembler.feed(event.data, 1.0)
    return assembler.finish()


def sse(*datas: bytes) -> bytes:
    return b"".join(b"data: " + d + b"\n\n" for d in datas)


ONE_LINE = st.binary(max_size=6) | st.text(max_size=5).map(str.encode)  # as on the wire:
NO_LINE_END = ONE_LINE.filter(lambda b: b"\n" not in b and b"\r" not in b)
EVENT_BYTES = st.one_of(  # a data line holds no line end
    st.builds(sim_chunk, NO_LINE_END),
    st.builds(tool_chunk, NO_LINE_END),
    st.sampled_from(ODD_EVENTS),
)


@given(
    first=st.sampled_from([sim_chunk(b"first"), FIRST_CALL, *ODD_EVENTS[:4]]),
    events=st.lists(EVENT_BYTES, max_size=14),
    comments=st.lists(st.integers(0, 14), max_size=2),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(0, 4000), max_size=6),
)
@settings(max_examples=examples(300), deadline=None)
def test_a_body_read_in_any_pieces_gives_what_parsing_every_event_gives(
    first: bytes, events: list[bytes], comments: list[int], crlf: bool, cuts: list[int]
) -> None:
    items = [sse(first), *(sse(e) for e in events), sse(b"[DONE]")]
    for at in sorted(comments, reverse=True):
        items.insert(min(at + 1, len(items) - 1), b": OPENROUTER PROCESSING\n\n")
    body = b"".join(items)
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    expected = read_text(first, *events, b"[DONE]")
    assert untimed(read_in_pieces(body, cuts)) == untimed(expected)
