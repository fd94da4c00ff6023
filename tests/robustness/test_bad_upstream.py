"""Bad upstream input, property-based: whatever the wire does, the REAL client comes back with a
classified Observation (never an exception), and the endpoints listing raises only ListingError.

One misbehaving loopback server serves the whole module (tests/robustness/upstream.py); each
hypothesis example registers what the server should do and drives a fresh client at it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from quick import examples
from upstream import Misbehaviour, UpstreamThread, listing
from wire_server import chunk, sse, usage_chunk

from canary.core.classify import classify_status
from canary.core.model import Contract, Endpoint, Observation, Pricing, Transport
from canary.openrouter.client import ListingError, OpenRouterClient

KEY = "sk-or-v1-ROBUSTKEY-0123456789abcdef"
ENDPOINT = Endpoint(
    model="acme/m", tag="deepinfra/fp8", provider_name="DeepInfra", pricing=Pricing(1e-7, 2e-7)
)
BODY: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 64}
# Generous deadlines where the server never hangs (a loaded machine must not turn an answer into
# a timeout); short ones where it does.
FAST: dict[str, Any] = {
    "connect_timeout_s": 3.0,
    "first_token_timeout_s": 3.0,
    "stream_timeout_s": 5.0,
    "max_stream_bytes": 1_000_000,
}
HANGING: dict[str, Any] = {"first_token_timeout_s": 0.5, "stream_timeout_s": 1.0}
PROPERTY = settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def up() -> Iterator[UpstreamThread]:
    with UpstreamThread() as server:
        yield server


def probe(up: UpstreamThread, behaviour: Misbehaviour, **client_kwargs: Any) -> Observation:
    key = up.add(behaviour)

    async def go() -> Observation:
        async with OpenRouterClient(up.base_url, KEY, **{**FAST, **client_kwargs}) as client:
            return await client.probe(
                ENDPOINT, {**BODY, "user": key}, contract=Contract.refusal, language="en"
            )

    return asyncio.run(go())


def assert_classified(obs: Observation) -> None:
    assert isinstance(obs, Observation)
    assert isinstance(obs.transport, Transport)
    if obs.transport is not Transport.ok:
        assert obs.error, obs
        assert len(obs.error) < 2000
        assert KEY not in obs.error
    if obs.status is not None and obs.status != 200:
        assert obs.transport is not Transport.ok, obs


# -- strategies --------------------------------------------------------------------------------

TITLE = st.text(
    st.characters(codec="utf-8", exclude_characters="<>&", exclude_categories=("Cs", "Cc")),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip())
STATUSES = st.sampled_from(
    [200, 201, 204, 206, 400, 401, 402, 403, 404, 408, 413, 418, 422, 429, 500, 502, 503, 504]
    + [520, 524, 529]
) | st.integers(200, 599)
CONTENT_TYPES = st.sampled_from(
    [
        "text/event-stream",
        "TEXT/EVENT-STREAM; charset=utf-8",
        "application/json",
        "text/html; charset=utf-8",
        "text/plain",
        "application/octet-stream",
        None,
    ]
)
SSE_FRAGMENTS = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"data: [DONE]",
        b": OPENROUTER PROCESSING",
        b"event: message",
        b"id: 7",
        b"retry: 10",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"{",
        b"}",
        b'"choices": [',
        b'{"delta": {"content": "Ol\xc3\xa1"}}',
        b'"finish_reason": "stop"',
        b"\xef\xbb\xbf",
        b"\xff\xfe\x00",
        json.dumps(chunk("Hello")).encode(),
        json.dumps(chunk(None, finish="stop")).encode(),
        json.dumps({"error": {"code": 502, "message": "upstream"}}).encode(),
        b"null",
        b"[1, 2]",
        b"9" * 400,
        b"[" * 5000,
    ]
)
SSE_SOUP = st.lists(SSE_FRAGMENTS | st.binary(max_size=40), max_size=40).map(b"".join)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ERROR_BODIES = st.builds(
    lambda code, message, metadata: json.dumps(
        {"error": {"code": code, "message": message, "metadata": metadata}}
    ).encode(),
    st.one_of(st.integers(-5, 700), st.text(max_size=10), st.none()),
    st.text(max_size=80),
    JSON_VALUES,
)


def html_page(title: str, echo_key: bool) -> bytes:
    leak = f"<pre>Authorization: Bearer {KEY}</pre>" if echo_key else ""
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1>{leak}<p>cloudflare</p></body></html>"
    ).encode()


BODIES = st.one_of(
    st.builds(html_page, TITLE, st.booleans()),
    ERROR_BODIES,
    SSE_SOUP,
    st.binary(max_size=3000),
    st.just(sse(chunk("Hello"), chunk(None, finish="stop"), usage_chunk())),
)


ODD_HEADERS = st.sampled_from(
    [
        {},
        {"Content-Encoding": "gzip"},  # we asked for identity; a host that compresses anyway
        {"Content-Encoding": "br"},
        {"Connection": "close"},
        {"Retry-After": "soon"},
        {"Retry-After": "99999999999999999999"},
        {"X-Long": "v" * 8000},
    ]
)


# -- the client's probe --------------------------------------------------------------------------


@pytest.mark.slow
@PROPERTY
@given(
    status=STATUSES,
    content_type=CONTENT_TYPES,
    body=BODIES,
    piece=st.integers(1, 4096),
    chunked=st.booleans(),
    ending=st.sampled_from(["end", "end", "end", "cut", "cut", "hang"]),
    headers=ODD_HEADERS,
)
def test_any_answer_comes_back_classified(
    up: UpstreamThread,
    status: int,
    content_type: str | None,
    body: bytes,
    piece: int,
    chunked: bool,
    ending: str,
    headers: dict[str, str],
) -> None:
    behaviour = Misbehaviour(
        status, content_type, body, piece, chunked, ending=ending, headers=headers
    )  # type: ignore[arg-type]
    obs = probe(up, behaviour, first_token_timeout_s=1.0, stream_timeout_s=2.0)
    assert_classified(obs)
    assert obs.status == status or (obs.status is None and obs.transport is Transport.timeout)


@PROPERTY
@given(body=st.binary(max_size=5000) | SSE_SOUP, piece=st.integers(1, 512))
def test_random_bytes_as_an_event_stream_are_never_a_completed_answer_by_accident(
    up: UpstreamThread, body: bytes, piece: int
) -> None:
    assume(b"[DONE]" not in body and b"finish_reason" not in body)
    obs = probe(up, Misbehaviour(body=body, piece=piece))
    assert_classified(obs)
    assert obs.transport is Transport.provider_error


@PROPERTY
@given(
    status=STATUSES,
    title=TITLE,
    echo_key=st.booleans(),
    content_type=st.sampled_from(["text/html", "text/html; charset=utf-8", "TEXT/HTML"]),
)
def test_an_html_error_page_is_classified_by_its_status_and_named_by_its_title(
    up: UpstreamThread, status: int, title: str, echo_key: bool, content_type: str
) -> None:
    assume(status not in (204, 304))  # bodiless statuses: a page after them is not theirs
    obs = probe(up, Misbehaviour(status, content_type, html_page(title, echo_key), chunked=False))
    assert_classified(obs)
    assert obs.error is not None
    if status == 200:
        assert obs.transport is Transport.provider_error
        assert "wrong content type" in obs.error
    else:
        expected = classify_status(status, None)
        assert obs.transport is (Transport.provider_error if expected is Transport.ok else expected)
        assert obs.error.startswith(f"HTTP {status}")
    shown = " ".join(title.split())
    if KEY not in shown and len(shown) <= 150:
        assert shown in obs.error


STREAM_PARTS = [chunk("Olá, "), chunk("tudo bem?"), chunk(None, finish="stop"), usage_chunk()]
FULL_STREAM = sse(*STREAM_PARTS)
FINISH_LINE_END = (
    FULL_STREAM.index(json.dumps(STREAM_PARTS[2]).encode()) + len(json.dumps(STREAM_PARTS[2])) + 1
)
DONE_END = FULL_STREAM.index(b"data: [DONE]\n\n") + len(b"data: [DONE]\n\n")


@PROPERTY
@given(
    cut_at=st.integers(0, len(FULL_STREAM)),
    piece=st.integers(1, 200),
    ending=st.sampled_from(["end", "cut"]),
)
def test_a_truncated_stream_is_a_provider_error_unless_the_generation_had_ended(
    up: UpstreamThread, cut_at: int, piece: int, ending: str
) -> None:
    obs = probe(up, Misbehaviour(body=FULL_STREAM[:cut_at], piece=piece, ending=ending))  # type: ignore[arg-type]
    assert_classified(obs)
    complete = cut_at >= (DONE_END if ending == "cut" else FINISH_LINE_END)
    if complete:
        assert obs.transport is Transport.ok, obs.error
        assert obs.content == "Olá, tudo bem?"
    else:
        assert obs.transport is Transport.provider_error
        assert obs.error is not None and "truncated" in obs.error


def _not_a_json_object(text: str) -> bool:
    if text.strip() == "[DONE]" or "\n" in text or "\r" in text:
        return False
    try:
        return not isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return True


@PROPERTY
@given(
    bad=st.text(max_size=60).filter(_not_a_json_object),
    position=st.integers(0, 2),
    piece=st.integers(1, 300),
)
def test_an_event_that_is_not_a_json_object_makes_the_stream_malformed(
    up: UpstreamThread, bad: str, position: int, piece: int
) -> None:
    parts: list[dict[str, Any] | str] = [
        chunk("Hello "),
        chunk("there"),
        chunk(None, finish="stop"),
    ]
    parts.insert(position, f"data: {bad}\n\n")
    obs = probe(up, Misbehaviour(body=sse(*parts), piece=piece))
    assert_classified(obs)
    if not bad.strip():  # `data:` with nothing (or blanks) after it is an event with empty data
        assert obs.transport is Transport.provider_error
    else:
        assert obs.transport is Transport.provider_error
        assert obs.error is not None and "malformed event" in obs.error


@pytest.mark.slow
@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    megabytes=st.floats(1.5, 4.0),
    kind=st.sampled_from(["events", "one_line", "html_error"]),
)
def test_a_huge_body_is_cut_at_the_cap_and_classified(
    up: UpstreamThread, megabytes: float, kind: str
) -> None:
    size = int(megabytes * 1_000_000)
    if kind == "events":
        one = f"data: {json.dumps(chunk('x' * 200))}\n\n".encode()
        behaviour = Misbehaviour(body=one * (size // len(one)), piece=65536)
    elif kind == "one_line":
        behaviour = Misbehaviour(body=b"data: " + b"A" * size, piece=65536)
    else:
        page = html_page("502 Bad Gateway", False) + b"<!-- " + b"z" * size + b" -->"
        behaviour = Misbehaviour(502, "text/html", page, piece=65536, chunked=False)
    obs = probe(up, behaviour, first_token_timeout_s=10.0, stream_timeout_s=20.0)
    assert_classified(obs)
    assert obs.transport is Transport.provider_error
    assert obs.error is not None
    if kind == "html_error":
        assert obs.error.startswith("HTTP 502") and "502 Bad Gateway" in obs.error
    else:
        assert "larger than 1000000 bytes" in obs.error
    assert len(obs.content) <= 1_000_000


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/plain", "text/html", "application/x-ndjson", None]
)
def test_a_valid_stream_under_a_wrong_content_type_is_a_provider_error(
    up: UpstreamThread, content_type: str | None
) -> None:
    obs = probe(up, Misbehaviour(content_type=content_type, body=FULL_STREAM))
    assert_classified(obs)
    assert obs.transport is Transport.provider_error
    assert obs.error is not None and obs.error.startswith("wrong content type for a stream")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("behaviour", "message", "stalled"),
    [
        (Misbehaviour(before_head="hang"), "no answer within 0.5 s (the stream never opened)",
         False),
        (Misbehaviour(body=b"", ending="hang"), "stalled: the stream opened but sent no token "
         "within 0.5 s", True),
        (Misbehaviour(body=b": OPENROUTER PROCESSING\n\n" * 3, ending="hang"), "stalled:", True),
        (Misbehaviour(body=sse(chunk("Hel"), done=False), ending="hang"), "stream not finished",
         False),
        (Misbehaviour(500, "application/json", b'{"error": ', chunked=False, ending="hang"), "",
         False),
    ],
    ids=["before-headers", "after-headers", "keepalives-only", "mid-stream", "mid-error-body"],
)  # fmt: skip
def test_a_hung_connection_is_a_timeout(
    up: UpstreamThread, behaviour: Misbehaviour, message: str, stalled: bool
) -> None:
    """A stream that opened and stays silent is a stall: one slow sample, censored at the
    timeout; any other hang is a transport timeout only."""
    obs = probe(up, behaviour, **HANGING)
    assert_classified(obs)
    # a timeout: the client's deadline ended it, not the server (which closes after HANG_S, a
    # cut the client would read as a provider error)
    assert obs.transport is Transport.timeout
    assert obs.error is not None and message in obs.error
    assert obs.ttft_censored is stalled
    assert (obs.ttft_s == HANGING["first_token_timeout_s"]) is stalled


def test_a_connection_closed_before_any_answer_is_a_provider_error(up: UpstreamThread) -> None:
    obs = probe(up, Misbehaviour(before_head="cut"))
    assert_classified(obs)
    assert obs.transport is Transport.provider_error and obs.status is None


# -- the endpoints listing -----------------------------------------------------------------------


class VirtualSleep:
    """Backoff waits advance a virtual offset on the client's clock instead of sleeping."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return time.perf_counter() + self.offset

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.offset += seconds


def list_endpoints(up: UpstreamThread, behaviour: Misbehaviour | dict[str, Any]) -> Any:
    """The listing's outcome: a list of endpoints, or the ListingError it raised."""
    slug = f"l{len(up.cases) + len(up.listings)}"
    if isinstance(behaviour, dict):
        up.add_listing(slug, behaviour)
    else:
        up.add(behaviour, key=slug)
    virtual = VirtualSleep()

    async def go() -> Any:
        async with OpenRouterClient(
            up.base_url,
            KEY,
            connect_timeout_s=2.0,
            listing_deadline_s=1.0,
            clock=virtual.clock,
            sleep=virtual.sleep,
        ) as client:
            try:
                return await client.list_endpoints(f"acme/{slug}")
            except ListingError as exc:
                return exc

    return asyncio.run(go())


LISTING_BODIES = st.one_of(
    st.builds(html_page, TITLE, st.booleans()),
    ERROR_BODIES,
    st.binary(max_size=2000),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.lists(JSON_VALUES, max_size=5).map(
        lambda entries: json.dumps({"data": {"endpoints": entries}}).encode()
    ),
    st.just(b"[" * 100_000),
)


@pytest.mark.slow
@PROPERTY
@given(
    status=STATUSES,
    content_type=CONTENT_TYPES,
    body=LISTING_BODIES,
    chunked=st.booleans(),
    ending=st.sampled_from(["end", "end", "cut", "hang"]),
)
def test_the_listing_returns_endpoints_or_raises_listing_error_only(
    up: UpstreamThread,
    status: int,
    content_type: str | None,
    body: bytes,
    chunked: bool,
    ending: str,
) -> None:
    behaviour = Misbehaviour(status, content_type, body, 512, chunked, ending=ending)  # type: ignore[arg-type]
    outcome = list_endpoints(up, behaviour)
    if isinstance(outcome, ListingError):
        assert isinstance(outcome.transport, Transport) and outcome.transport is not Transport.ok
        assert KEY not in str(outcome) and len(str(outcome)) < 2000
    else:
        assert status == 200 and ending == "end"
        assert all(isinstance(e, Endpoint) for e in outcome)


ENDPOINT_FIELDS = st.fixed_dictionaries(
    {"provider_name": st.sampled_from(["Alpha", "Bravo Cloud", ""])},
    optional={
        "tag": st.text(max_size=12) | JSON_VALUES,
        "pricing": st.dictionaries(st.sampled_from(["prompt", "completion"]), JSON_VALUES),
        "context_length": JSON_VALUES,
        "max_completion_tokens": JSON_VALUES,
        "status": JSON_VALUES,
        "quantization": JSON_VALUES,
        "uptime_last_30m": JSON_VALUES,
        "latency_last_30m": JSON_VALUES,
        "supported_parameters": JSON_VALUES,
    },
)


@PROPERTY
@given(entries=st.lists(ENDPOINT_FIELDS, max_size=6))
def test_odd_field_values_in_a_listing_never_escape_as_another_exception(
    up: UpstreamThread, entries: list[dict[str, Any]]
) -> None:
    outcome = list_endpoints(up, {"data": {"id": "acme/x", "endpoints": entries}})
    assert not isinstance(outcome, ListingError), outcome
    for endpoint in outcome:
        for number in (endpoint.context_length, endpoint.max_completion_tokens, endpoint.status):
            assert number is None or isinstance(number, int)
        assert endpoint.pricing.prompt == endpoint.pricing.prompt  # never NaN
        json.dumps(endpoint.latency_last_30m, allow_nan=False)
        json.dumps(endpoint.uptime_last_30m, allow_nan=False)


def test_a_listing_with_an_overflowing_number_is_read_not_crashed(up: UpstreamThread) -> None:
    body = listing("acme/x", {"alpha": "Alpha"})
    raw = json.dumps(body).replace('"context_length": 32768', '"context_length": 1e400')
    raw = raw.replace('"uptime_last_30m": 99.0', '"uptime_last_30m": -1e999')
    outcome = list_endpoints(up, json.loads(raw))
    assert [e.tag for e in outcome] == ["alpha"]
    assert outcome[0].context_length is None and outcome[0].uptime_last_30m is None
