"""The SSE parser alone: however the bytes are split, the same events come out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.openrouter.sse import SSEEvent, SSEParser


def parse_all(body: bytes) -> list[SSEEvent]:
    """A complete body parsed at once."""
    parser = SSEParser()
    return parser.feed(body) + parser.close()


FRAGMENTS = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"data",
        b"event: delta",
        b"id: 42",
        b"id: a\x00b",
        b": OPENROUTER PROCESSING",
        b":",
        b"[DONE]",
        b'{"choices": [{"delta": {"content": "x"}}]}',
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\r",
        b"\r\r",
        b"\n\n",
        b"\xef\xbb\xbf",
        b"\xe2\x82",  # half a UTF-8 sequence
        b"\xac",
        b"\xff",
        b" ",
        "Olá 日本語".encode(),
    ]
)
STREAMS = st.lists(FRAGMENTS | st.binary(max_size=12), max_size=60).map(b"".join)


def split_feed(body: bytes, cuts: list[int]) -> tuple[list[SSEEvent], int]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    start = 0
    for cut in sorted({c for c in cuts if 0 < c < len(body)}) + [len(body)]:
        events += parser.feed(body[start:cut])
        start = cut
    return events + parser.close(), parser.comments


def whole(body: bytes) -> tuple[list[SSEEvent], int]:
    parser = SSEParser()
    return parser.feed(body) + parser.close(), parser.comments


@settings(max_examples=examples(200), deadline=None)
@given(body=STREAMS, cuts=st.lists(st.integers(0, 400), max_size=40))
def test_any_split_of_any_bytes_gives_the_same_events(body: bytes, cuts: list[int]) -> None:
    assert split_feed(body, cuts) == whole(body)


@settings(max_examples=examples(200), deadline=None)
@given(body=STREAMS)
def test_byte_by_byte_feeding_gives_the_same_events(body: bytes) -> None:
    assert split_feed(body, list(range(len(body)))) == whole(body)


LINE_TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n", exclude_categories=("Cs",)),
    max_size=30,
)
EVENTS = st.lists(
    st.tuples(st.lists(LINE_TEXT, min_size=1, max_size=3), st.none() | LINE_TEXT), max_size=8
)


@settings(max_examples=examples(150), deadline=None)
@given(
    events=EVENTS,
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(0, 600), max_size=30),
    keepalive=st.booleans(),
)
def test_well_formed_events_come_back_whole_with_any_line_ending_and_split(
    events: list[tuple[list[str], str | None]],
    newline: bytes,
    cuts: list[int],
    keepalive: bool,
) -> None:
    body = b""
    for lines, name in events:
        if keepalive:
            body += b": OPENROUTER PROCESSING" + newline + newline
        if name is not None:
            body += b"event: " + name.encode() + newline
        for line in lines:
            body += b"data: " + line.encode() + newline
        body += newline
    parsed, _ = split_feed(body, cuts)
    assert [e.data for e in parsed] == ["\n".join(lines) for lines, _ in events]
    assert [e.event for e in parsed] == [name for _, name in events]
    assert parsed == parse_all(body)
