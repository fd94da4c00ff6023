from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.openrouter.sse import SSEError, SSEEvent, SSEParser


def parse_all(body: bytes) -> list[SSEEvent]:
    """A complete body parsed at once."""
    parser = SSEParser()
    return parser.feed(body) + parser.close()


BODY = (
    b": OPENROUTER PROCESSING\n\n"
    b'data: {"a": 1}\n\n'
    b": \n\n"
    b"event: message\nid: 7\ndata: line one\ndata: line two\n\n"
    b"data:no-space\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent(data='{"a": 1}'),
    SSEEvent(data="line one\nline two", event="message", id="7"),
    SSEEvent(data="no-space", id="7"),
    SSEEvent(data="[DONE]", id="7"),
]


def feed_in_pieces(body: bytes, cuts: list[int]) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    start = 0
    for cut in sorted(set(cuts)) + [len(body)]:
        events += parser.feed(body[start:cut])
        start = cut
    return events + parser.close()


def test_events_comments_and_multiline_data() -> None:
    events = parse_all(BODY)
    assert events == EXPECTED
    assert events[-1].done and not events[0].done


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_ends_give_the_same_events(newline: bytes) -> None:
    assert parse_all(BODY.replace(b"\n", newline)) == EXPECTED


def test_crlf_split_between_two_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\ndata: y\r\n\r\n") == [SSEEvent(data="x"), SSEEvent(data="y")]


def test_one_byte_at_a_time() -> None:
    assert feed_in_pieces(BODY, list(range(len(BODY)))) == EXPECTED


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=20), st.booleans())
def test_any_chunking_gives_the_same_events(cuts: list[int], crlf: bool) -> None:
    body = BODY.replace(b"\n", b"\r\n") if crlf else BODY
    cuts = [c * len(body) // len(BODY) for c in cuts]
    assert feed_in_pieces(body, cuts) == EXPECTED


def test_comments_are_counted_and_skipped() -> None:
    parser = SSEParser()
    assert parser.feed(b": OPENROUTER PROCESSING\n\n: \n\n:\n\n") == []
    assert parser.comments == 3


def test_multibyte_characters_split_across_chunks_survive() -> None:
    body = 'data: {"content": "亚洲 ção"}\n\n'.encode()
    cut = body.index("亚".encode()) + 1
    assert feed_in_pieces(body, [cut]) == [SSEEvent(data='{"content": "亚洲 ção"}')]


def test_invalid_utf8_becomes_replacement_character() -> None:
    assert parse_all(b"data: a\xff\xfeb\n\n") == [SSEEvent(data="a\ufffd\ufffdb")]


def test_leading_bom_and_leading_whitespace_lines_are_harmless() -> None:
    assert parse_all(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent(data="x")]
    assert parse_all(b"\n         \ndata: x\n\n") == [SSEEvent(data="x")]


def test_unknown_fields_and_empty_events_are_ignored() -> None:
    assert parse_all(b"retry: 100\nfoo: bar\n\nevent: ping\n\ndata: x\n\n") == [SSEEvent(data="x")]


def test_close_keeps_complete_lines_and_drops_a_cut_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: whole\n") == []
    assert parser.close() == [SSEEvent(data="whole")]
    parser = SSEParser()
    assert parser.feed(b'data: {"cut in the mid') == []
    assert parser.close() == []


def test_a_line_over_the_limit_raises() -> None:
    parser = SSEParser(max_line_bytes=64)
    with pytest.raises(SSEError, match="64 bytes"):
        parser.feed(b"data: " + b"x" * 100)


def test_many_short_lines_are_not_limited_by_the_line_limit() -> None:
    parser = SSEParser(max_line_bytes=64)
    events = parser.feed(b"data: 0123456789\n\n" * 100)
    assert len(events) == 100


def test_a_long_line_arriving_in_small_pieces_is_one_event() -> None:
    line = b"data: " + b"x" * 200_000 + b"\r"
    parser = SSEParser()
    events = [e for i in range(0, len(line), 1000) for e in parser.feed(line[i : i + 1000])]
    events += parser.feed(b"\n\r\n")
    assert events == [SSEEvent(data="x" * 200_000)]
