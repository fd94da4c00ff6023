"""The chunk-handling rules of StreamAssembler, one behaviour per test."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_server import chunk, usage_chunk

from canary.core.model import Transport
from canary.openrouter.sse import SSEParser
from canary.openrouter.stream import StreamAssembler, StreamOutcome, feed_piece


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


def coalescing_after(*items: dict[str, Any]) -> list[bool]:
    """may_coalesce after each of the chunks, fed in order."""
    from canary.openrouter.client import may_coalesce

    assembler = StreamAssembler()
    seen = []
    for i, item in enumerate(items):
        assembler.feed(json.dumps(item), float(i + 1))
        seen.append(may_coalesce(assembler))
    return seen


def test_reads_gather_only_after_the_first_content_token() -> None:
    assert coalescing_after(chunk(""), chunk("Olá"), chunk(" mundo")) == [False, True, True]


def test_a_thinking_model_is_read_finely_until_its_first_content_token() -> None:
    thinking = [chunk("", reasoning="hmm"), chunk("", reasoning="so"), chunk("Olá")]
    assert coalescing_after(*thinking) == [False, False, True]


def test_a_tool_call_first_lets_the_reads_gather() -> None:
    assert coalescing_after(tool_delta(0, name="lookup", arguments="{")) == [True]


def read_raw(*events: bytes) -> StreamOutcome:
    """The probes' path: each event's data as the raw bytes of the wire."""
    assembler = StreamAssembler()
    for i, data in enumerate(events):
        assembler.feed(data, float(i + 1))
    return assembler.finish()


def read_text(*events: bytes) -> StreamOutcome:
    """The same events decoded first: every chunk parsed in full."""
    assembler = StreamAssembler()
    for i, data in enumerate(events):
        assembler.feed(data.decode("utf-8", errors="replace"), float(i + 1))
    return assembler.finish()


def sim_chunk(content: bytes, *, gen: str = "gen-1", tail: bytes = b"") -> bytes:
    """A content chunk as the simulator and OpenRouter write it, content as raw string bytes."""
    return (
        b'{"id":"' + gen.encode() + b'","object":"chat.completion.chunk","created":1,'
        b'"model":"acme/m","provider":"DeepInfra","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"' + content + b'"' + tail + b"},"
        b'"finish_reason":null,"native_finish_reason":null}]}'
    )


def tool_chunk(
    arguments: bytes, *, index: bytes = b"0", call: bytes = b"", function: bytes = b""
) -> bytes:
    """A tool call's fragment as OpenAI's hosts write it through OpenRouter (arguments as raw
    string bytes; ``call`` and ``function``: more fields of the call and of its function, such
    as its id and name)."""
    return (
        b'{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4.1-mini",'
        b'"object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":'
        b'{"role":"assistant","content":null,"tool_calls":[{"index":' + index + call
        + b',"function":{' + function + b'"arguments":"' + arguments + b'"},"type":"function"}]},'
        b'"finish_reason":null,"native_finish_reason":null,"logprobs":null}],'
        b'"system_fingerprint":"fp_6f2eabb9a5"}'
    )  # fmt: skip


FIRST_CALL = tool_chunk(b"", call=b',"id":"call_1"', function=b'"name":"get_weather",')

# After a plain content chunk, every other one whose bytes differ elsewhere or whose content is
# not a plain string must still be parsed in full: the outcomes of both paths are the same.
ODD_FOLLOWERS = [
    sim_chunk(b"plain"),
    sim_chunk(b'say \\"hi\\"'),  # escapes
    sim_chunk(b"line\\nbreak \\u00e9"),
    sim_chunk(b"a\tb"),  # a raw control byte: not JSON
    sim_chunk(b"bad \xff utf-8"),
    sim_chunk(b"\xed\xa0\x80"),  # a surrogate: not UTF-8
    sim_chunk(b""),
    sim_chunk(b'x","content":"y'),  # another string where the content was
    sim_chunk(b"other id", gen="gen-2"),
    sim_chunk(b"with reasoning", tail=b',"reasoning":"hmm"'),
    sim_chunk(b"x").replace(b'"finish_reason":null', b'"finish_reason":"stop"'),
    sim_chunk(b"x").replace(b'"native_finish_reason":null', b'"native_finish_reason":"error"'),
    sim_chunk(b"x")[:-1] + b',"usage":{"prompt_tokens":3,"completion_tokens":2}}',
    sim_chunk(b"\xc3\xa9t\xc3\xa9 \xe4\xba\x9a"),
    tool_chunk(b'{\\"city\\": '),
    tool_chunk(b'\\"Lisbon\\"}', index=b"1"),  # another call
    tool_chunk(b"x", call=b',"id":"call_2"'),  # a call's first fragment
    tool_chunk(b'x"},"name":"y'),  # a name where the arguments were
    tool_chunk(b"x").replace(b'"content":null', b'"content":"text"'),
    tool_chunk(b"x").replace(b'"finish_reason":null', b'"finish_reason":"tool_calls"'),
    tool_chunk(b"x").replace(b'"index":0,"function"', b'"index":true,"function"'),
    tool_chunk(b""),
]


@pytest.mark.parametrize("follower", ODD_FOLLOWERS, ids=range(len(ODD_FOLLOWERS)))
def test_chunks_read_by_their_bytes_give_what_parsing_them_gives(follower: bytes) -> None:
    events = (sim_chunk(b"Ol\xc3\xa1"), follower, sim_chunk(b" mundo"), b"[DONE]")
    assert read_raw(*events) == read_text(*events)


@pytest.mark.parametrize("follower", ODD_FOLLOWERS, ids=range(len(ODD_FOLLOWERS)))
def test_tool_call_fragments_read_by_their_bytes_give_what_parsing_them_gives(
    follower: bytes,
) -> None:
    events = (FIRST_CALL, tool_chunk(b'{\\"q\\":'), follower, tool_chunk(b" 1}"), b"[DONE]")
    assert read_raw(*events) == read_text(*events)
    assert read_raw(*events).tool_calls[0].arguments.startswith('{"q":')


def test_a_first_chunk_that_is_not_plain_is_not_the_template() -> None:
    for first in ODD_FOLLOWERS[1:]:
        events = (first, sim_chunk(b"a"), sim_chunk(b"b"), sim_chunk(b"c\\n"), b"[DONE]")
        assert read_raw(*events) == read_text(*events)
        events = (first, tool_chunk(b"a"), tool_chunk(b"b"), tool_chunk(b"c\\n"), b"[DONE]")
        assert read_raw(*events) == read_text(*events)


@given(st.lists(st.binary(max_size=12) | st.text(max_size=8).map(str.encode), max_size=12))
@settings(max_examples=300, deadline=None)
def test_any_content_bytes_read_the_same_either_way(contents: list[bytes]) -> None:
    events = (sim_chunk(b"first"), *(sim_chunk(c) for c in contents), b"[DONE]")
    assert read_raw(*events) == read_text(*events)


@given(st.lists(st.binary(max_size=12) | st.text(max_size=8).map(str.encode), max_size=12))
@settings(max_examples=300, deadline=None)
def test_any_arguments_bytes_read_the_same_either_way(fragments: list[bytes]) -> None:
    events = (FIRST_CALL, tool_chunk(b"{"), *(tool_chunk(f) for f in fragments), b"[DONE]")
    assert read_raw(*events) == read_text(*events)


def untimed(outcome: StreamOutcome) -> StreamOutcome:
    return replace(outcome, ttft_s=None, reasoning_s=None, first_token_s=None)


def read_in_pieces(body: bytes, cuts: list[int]) -> StreamOutcome:
    """The probes' path over a body cut into reads at ``cuts``."""
    parser, assembler = SSEParser(), StreamAssembler()
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        if end > start:
            feed_piece(parser, assembler, body[start:end], lambda: 1.0)
    for data in parser.close_data():
        assembler.feed(data, 1.0)
    return assembler.finish()


def sse(*datas: bytes) -> bytes:
    return b"".join(b"data: " + d + b"\n\n" for d in datas)


def test_plain_content_events_after_the_template_are_read_in_one_go() -> None:
    assembler = StreamAssembler()
    assembler.feed(sim_chunk(b"Hello"), 1.0)
    block = sse(*(sim_chunk(w) for w in (b" big", b" w\xc3\xb6rld", b" \xe4\xba\x9a")))
    assert assembler.feed_plain_run(block + b"data: " + sim_chunk(b"cut")[:20]) == len(block)
    assert assembler.finish().content == "Hello big w\u00f6rld \u4e9a"
    assert assembler.finish().events == 4


def test_escaped_strings_and_tool_call_fragments_are_read_in_one_go_too() -> None:
    assembler = StreamAssembler()
    assembler.feed(sim_chunk(b"Hello"), 1.0)
    block = sse(sim_chunk(b' \\"big\\"'), sim_chunk(b"\\n\\u00e9"))
    assert assembler.feed_plain_run(block) == len(block)
    assert assembler.finish().content == 'Hello "big"\n\u00e9'
    assembler = StreamAssembler()
    assembler.feed(FIRST_CALL, 1.0)
    assembler.feed(tool_chunk(b'{\\"city\\"'), 2.0)
    block = sse(tool_chunk(b": "), tool_chunk(b'\\"Lisbon\\"'), tool_chunk(b"}"))
    assert assembler.feed_plain_run(block) == len(block)
    assert assembler.finish().tool_calls[0].arguments == '{"city": "Lisbon"}'
    assert assembler.finish().events == 5


@pytest.mark.parametrize(
    "block",
    [
        sse(sim_chunk(b"a"), sim_chunk(b"b")).replace(b"\n\n", b"\r\n\r\n"),  # CRLF
        b": keep-alive\n\n" + sse(sim_chunk(b"a")),  # a comment first
        b"data:" + sim_chunk(b"a") + b"\n\n",  # no space after the colon
        sse(sim_chunk(b"")),  # empty content
        sse(sim_chunk(b'say "hi')),  # a quote unescaped
        sse(sim_chunk(b'a","content":"b')),  # another string where the content was
        sse(sim_chunk(b'a","b')),  # two strings where the content was (not JSON)
        sse(sim_chunk(b"a\\"), sim_chunk(b"b")),  # an escape cut by the event's end
        sse(sim_chunk(b"\xc3")) + sse(sim_chunk(b"\xa9")),  # a character cut in two
        sse(sim_chunk(b"a\x00b")),  # a raw control byte
    ],
)
def test_events_that_are_not_plain_template_events_are_left_to_the_parser(block: bytes) -> None:
    assembler = StreamAssembler()
    assembler.feed(sim_chunk(b"Hello"), 1.0)
    assert assembler.feed_plain_run(block) == 0


def test_a_template_learned_from_several_data_lines_reads_nothing_at_once() -> None:
    assembler = StreamAssembler()
    assembler.feed(sim_chunk(b"Hello").replace(b'"choices"', b'\n"choices"'), 1.0)
    assert assembler.feed_plain_run(sse(sim_chunk(b"a"))) == 0


ONE_LINE = st.binary(max_size=6) | st.text(max_size=5).map(str.encode)  # as on the wire:
NO_LINE_END = ONE_LINE.filter(lambda b: b"\n" not in b and b"\r" not in b)
EVENT_BYTES = st.one_of(  # a data line holds no line end
    st.builds(sim_chunk, NO_LINE_END),
    st.builds(tool_chunk, NO_LINE_END),
    st.sampled_from(ODD_FOLLOWERS),
)


@given(
    first=st.sampled_from([sim_chunk(b"first"), FIRST_CALL, *ODD_FOLLOWERS[1:4]]),
    events=st.lists(EVENT_BYTES, max_size=14),
    comments=st.lists(st.integers(0, 14), max_size=2),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(0, 4000), max_size=6),
)
@settings(max_examples=300, deadline=None)
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
