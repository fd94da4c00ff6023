"""The one HTTP client for OpenRouter: the endpoints listing and pinned streaming probes.

Every failure comes back classified (:mod:`canary.core.classify`); nothing here judges quality.
The API key is sent only in the ``Authorization`` header, registered with the log scrubber, and
never appears in a message: messages are built from status codes, parsed bodies and exception
kinds, never from headers or request objects.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import NamedTuple
from urllib.parse import quote

import httpx

from canary.core.classify import (
    classify_exception,
    classify_status,
    error_message,
    error_of,
    retryable,
)
from canary.core.model import (
    OPERATOR_TRANSPORTS,
    Contract,
    Endpoint,
    Observation,
    Transport,
    Usage,
)
from canary.openrouter.endpoints import EndpointsPayloadError, parse_endpoints
from canary.openrouter.shapes import JSONObject, as_object
from canary.openrouter.sse import SSEError, SSEParser
from canary.openrouter.stream import StreamAssembler, StreamOutcome
from canary.openrouter.wire import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    MAX_ERROR_BODY_BYTES,
    describe,
    error_provider,
    exception_kind,
    http_error_message,
    load_json,
    pin_provider,
    pinned_payload,
    read_capped,
    retry_after,
    same_provider,
    snippet,
)
from canary.service.logs import get_logger, register_secret, scrub

__all__ = ["ListingError", "OpenRouterClient", "pin_provider"]

# No connection to OpenRouter could be opened (nor a tunnel through the proxy): the request never
# reached it, whatever its transport class says (canary.core.probing).
CONNECT_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError)

log = get_logger("canary.openrouter")

MAX_LISTING_BYTES = 16 * 1024 * 1024
MAX_STREAM_BYTES = 8 * 1024 * 1024
DRAIN_S = 0.5
# httpcore's pool does O(connections²) bookkeeping per request (over half a round's CPU at 128
# connections): the probes spread over pools of at most this many connections instead.
POOL_SIZE = 8
# Once an answer's first content token is in, its stream is read in pauses of this long: the
# tokens sent meanwhile come in one read, one wake-up of the event loop and one pass through
# httpx's network path instead of one per token (most of a probe's CPU). Its end is seen up to
# this much later; the time to first token is not touched.
READ_PAUSE_S = 0.1
# Pieces of one read come out of httpx back to back, well within this: no pause between them.
_BURST_S = 0.002


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (its CA bundle, or SSL_CERT_FILE/SSL_CERT_DIR), built once per
    process and shared, as httpx advises (building one reads the whole bundle)."""
    return httpx.create_ssl_context()


class ListingError(RuntimeError):
    """The endpoints listing failed for good (after retries within its deadline)."""

    def __init__(
        self,
        model_id: str,
        transport: Transport,
        message: str,
        *,
        attempts: int = 1,
        connected: bool = True,
    ):
        self.model_id = model_id
        self.transport = transport
        self.attempts = attempts
        self.connected = connected  # False: the last attempt could not connect to OpenRouter
        super().__init__(f"listing endpoints of {model_id} failed ({transport}): {message}")


class OpenRouterClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        connect_timeout_s: float = 5.0,
        first_token_timeout_s: float = 30.0,
        stream_timeout_s: float = 60.0,
        listing_deadline_s: float = 30.0,
        max_connections: int = 64,
        proxy: str | None = None,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        max_stream_bytes: int = MAX_STREAM_BYTES,
    ) -> None:
        register_secret(api_key)
        if proxy:
            register_secret(httpx.URL(proxy).password or "")
        self.base_url = base_url.rstrip("/")
        # Parsed once: a relative path would be parsed and merged with base_url on every probe.
        self._chat_url = httpx.URL(f"{self.base_url}/chat/completions")
        self.first_token_timeout_s = first_token_timeout_s
        self.stream_timeout_s = stream_timeout_s
        self.listing_deadline_s = listing_deadline_s
        self.max_stream_bytes = max_stream_bytes
        self._clock = clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        headers = {"X-OpenRouter-Title": "canary", "Accept-Encoding": "identity"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"

        def http(connections: int) -> httpx.AsyncClient:
            return httpx.AsyncClient(
                base_url=self.base_url,
                headers=headers,
                # `proxy` (the setting) wins; without it HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and
                # NO_PROXY apply (trust_env)
                proxy=proxy or None,
                trust_env=True,
                follow_redirects=False,
                verify=_tls(),
                # Reads are bounded by the asyncio deadlines in probe()/list_endpoints(); so is a
                # wait for the pool (callers keep their concurrency within max_connections).
                timeout=httpx.Timeout(
                    connect=connect_timeout_s, read=None, write=connect_timeout_s, pool=None
                ),
                limits=httpx.Limits(
                    max_connections=connections, max_keepalive_connections=connections
                ),
            )

        pools = -(-max_connections // POOL_SIZE)
        self._pools = [http(-(-max_connections // pools)) for _ in range(pools)]
        self._in_flight = [0] * pools  # probes in flight per pool: each goes to the least busy
        # The listing has a pool of its own: a model's listing must not queue behind the probes
        # of the models before it (it is the first link of that model's chain).
        self._listing_http = http(max_connections)

    async def __aenter__(self) -> OpenRouterClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for pool in (*self._pools, self._listing_http):
            await pool.aclose()

    # -- the endpoints listing -------------------------------------------------------------

    async def list_endpoints(self, model_id: str) -> list[Endpoint]:
        """Every endpoint of ``model_id``; retries 429/5xx/connect errors with exponential backoff
        and full jitter, honouring ``Retry-After``, all within one ``listing_deadline_s``."""
        author, _, slug = model_id.partition("/")
        path = f"/models/{quote(author, safe='')}/{quote(slug, safe='')}/endpoints"
        deadline = self._clock() + self.listing_deadline_s
        attempt = 0
        # Whether OpenRouter was ever reached: an attempt cut by the deadline says nothing either
        # way, so a listing refused connections until its deadline ran out is still unreachable.
        reached: bool | None = None
        while True:
            attempt += 1
            result = await self._listing_attempt(model_id, path, deadline - self._clock())
            if not isinstance(result, _Failed):
                return result
            if result.connected is not None:
                reached = bool(reached) or result.connected
            connected = reached is not False
            if not retryable(result.transport):
                raise ListingError(
                    model_id,
                    result.transport,
                    result.message,
                    attempts=attempt,
                    connected=connected,
                )
            wait = result.retry_after
            delay = self._rng.uniform(0.0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))
            delay = max(delay, wait) if wait is not None else delay
            remaining = deadline - self._clock()
            if delay >= remaining:
                why = "deadline"
                if wait is not None and wait >= remaining:
                    why = f"Retry-After {wait:g} s"
                raise ListingError(
                    model_id,
                    result.transport,
                    f"{result.message}; gave up after {attempt} attempt(s) within "
                    f"{self.listing_deadline_s:g} s ({why})",
                    attempts=attempt,
                    connected=connected,
                )
            log.info(
                "listing_retry",
                model=model_id,
                attempt=attempt,
                transport=str(result.transport),
                delay_s=round(delay, 3),
            )
            await self._sleep(delay)

    async def _listing_attempt(
        self, model_id: str, path: str, remaining: float
    ) -> list[Endpoint] | _Failed:
        if remaining <= 0:
            return _Failed(Transport.timeout, "listing deadline exceeded", connected=None)
        try:
            async with (
                asyncio.timeout(remaining),
                self._listing_http.stream("GET", path) as response,
            ):
                raw, too_big = await read_capped(response, MAX_LISTING_BYTES)
                status, headers = response.status_code, response.headers
                content_type = headers.get("content-type", "")
        except TimeoutError:
            return _Failed(
                Transport.timeout, "no answer within the listing deadline", connected=None
            )
        except (httpx.HTTPError, OSError) as exc:
            return _Failed(
                classify_exception(exception_kind(exc)),
                describe(exc),
                connected=not isinstance(exc, CONNECT_FAILURES),
            )
        body = load_json(raw)
        if status != 200:
            transport = classify_status(status, as_object(body), pinned=False)
            message = http_error_message(status, body, raw, content_type)
            return _Failed(transport, message, retry_after(headers, body))
        if too_big:
            return _Failed(Transport.provider_error, f"listing over {MAX_LISTING_BYTES} bytes")
        if not isinstance(body, dict):
            return _Failed(
                Transport.provider_error, f"listing is not JSON: {snippet(raw, content_type)}"
            )
        if error_of(body) is not None:
            return _Failed(classify_status(200, body, pinned=False), error_message(200, body))
        try:
            return parse_endpoints(model_id, body)
        except EndpointsPayloadError as exc:
            return _Failed(Transport.provider_error, str(exc))

    # -- who served an answer -----------------------------------------------------------------

    async def generation_provider(self, gen_id: str, deadline_s: float = 30.0) -> str | None:
        """The ``provider_name`` OpenRouter reports for generation ``gen_id`` (readable only by
        the account that made it, a few seconds after it ended): 404, 429, 5xx and connection
        errors are retried with backoff within ``deadline_s``; None when it never said."""
        deadline = self._clock() + deadline_s
        for attempt in itertools.count(1):
            remaining = deadline - self._clock()
            if remaining <= 0:
                return None
            try:
                async with asyncio.timeout(remaining):
                    response = await self._listing_http.get("/generation", params={"id": gen_id})
                status, body = response.status_code, load_json(response.content)
            except (TimeoutError, httpx.HTTPError, OSError):
                status, body = 503, None
            data = as_object((as_object(body) or {}).get("data")) if status == 200 else None
            name = (data or {}).get("provider_name")
            if isinstance(name, str) and name:
                return name
            if status not in (404, 429) and status < 500:
                return None  # another account's answer, or a bad id: never guessed
            delay = self._rng.uniform(0.5, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt))
            await self._sleep(min(delay, max(deadline - self._clock(), 0.0)))
        return None

    # -- pinned streaming probes ------------------------------------------------------------

    async def probe(
        self,
        endpoint: Endpoint,
        body: JSONObject,
        *,
        contract: Contract,
        language: str | None = None,
        attempt: int = 1,
        checksum: str = "",
        nonce: str = "",
    ) -> Observation:
        """Send one streaming chat completion pinned to ``endpoint`` alone and observe it."""
        timing, status, ending, outcome, providers, attribution_ok = await self._exchange(
            endpoint, body
        )
        return Observation(
            contract=contract,
            tag=endpoint.tag,
            language=language,
            attempt=attempt,
            checksum=checksum,
            nonce=nonce,
            transport=ending.transport,
            status=status,
            error=scrub(ending.error) if ending.error else None,
            served_by=providers[0] if providers else None,
            attribution_ok=attribution_ok,
            ttft_s=outcome.ttft_s if ending.stalled_at is None else ending.stalled_at,
            ttft_censored=ending.stalled_at is not None,
            reasoning_s=outcome.reasoning_s,
            total_s=self._clock() - timing.started,
            started_at=timing.wall_started,
            content=outcome.content,
            finish_reason=outcome.finish_reason,
            native_finish_reason=outcome.native_finish_reason,
            tool_calls=outcome.tool_calls,
            usage=outcome.usage,
            served_model=outcome.served_model,
            connected=ending.connected,
            response_id=outcome.response_id,
        )

    async def sample(self, endpoint: Endpoint, body: JSONObject) -> Completion:
        """One streaming chat completion pinned to ``endpoint`` that no contract judges (an
        equality sample): its text when it completed (None otherwise), and its usage."""
        _, _, ending, outcome, _, attribution_ok = await self._exchange(endpoint, body)
        completed = ending.transport is Transport.ok and attribution_ok
        return Completion(outcome.content if completed else None, outcome.usage)

    async def _exchange(self, endpoint: Endpoint, body: JSONObject) -> _Exchange:
        timing = _Timing(self._clock)
        assembler = StreamAssembler()
        status: int | None = None
        ending: _Ending | None = None  # how it failed before its stream could say
        stream_open = False  # a 200 event stream whose body is being read
        first_deadline = min(self.first_token_timeout_s, self.stream_timeout_s)
        pool = min(range(len(self._pools)), key=self._in_flight.__getitem__)
        self._in_flight[pool] += 1
        try:
            async with (
                asyncio.timeout_at(timing.loop_started + first_deadline) as deadline,
                self._pools[pool].stream(
                    "POST",
                    self._chat_url,
                    json=pinned_payload(endpoint.model, endpoint.tag, body),
                    extensions={"trace": timing.trace},
                ) as response,
            ):
                status = response.status_code
                ending = await self._early_answer(response)
                if ending is None:
                    stream_open = True
                    await self._read_stream(response, assembler, timing, deadline)
        except TimeoutError:
            if assembler.done:  # the end of the body did not come within DRAIN_S
                pass
            elif stream_open and assembler.first_token_s is None:
                # The provider was reached and is slow: a latency failure, not a transport one.
                # The probe's own contract sees a timeout; ttft sees a sample censored here.
                why = f"stalled: the stream opened but sent no token within {first_deadline:g} s"
                ending = _Ending(
                    classify_exception("first_token_timeout"), why, stalled_at=first_deadline
                )
            else:
                ending = self._timed_out(assembler)
        except (httpx.HTTPError, OSError) as exc:
            message = describe(exc)
            if status == 200:
                message = f"truncated stream: connection lost ({message})"
            # connected=False: no connection to OpenRouter could be opened
            connected = status is not None or not isinstance(exc, CONNECT_FAILURES)
            if not assembler.done:  # after [DONE], a lost connection costs only the connection
                kind = classify_exception(exception_kind(exc))
                ending = _Ending(kind, message, connected=connected)
        except (SSEError, _TooLarge) as exc:
            ending = _Ending(Transport.provider_error, str(exc))
        finally:
            self._in_flight[pool] -= 1
        outcome = assembler.finish()
        if ending is None:
            ending = _Ending(outcome.transport, outcome.error)
        providers = outcome.providers or ((ending.served_by,) if ending.served_by else ())
        attribution_ok = self._attributed(endpoint, providers, status)
        if ending.transport is not Transport.ok:
            level = log.warning if ending.transport in OPERATOR_TRANSPORTS else log.info
            level(
                "probe_transport_error",
                model=endpoint.model,
                tag=endpoint.tag,
                transport=str(ending.transport),
                status=status,
                error=ending.error,
            )
        return _Exchange(timing, status, ending, outcome, providers, attribution_ok)

    def _timed_out(self, assembler: StreamAssembler) -> _Ending:
        no_token = assembler.first_token_s is None
        if no_token and self.first_token_timeout_s < self.stream_timeout_s:
            message = f"no answer within {self.first_token_timeout_s:g} s (the stream never opened)"
            return _Ending(classify_exception("first_token_timeout"), message)
        message = f"stream not finished within {self.stream_timeout_s:g} s"
        message += " (no token)" if no_token else ""
        return _Ending(classify_exception("stream_timeout"), message)

    async def _read_stream(
        self,
        response: httpx.Response,
        assembler: StreamAssembler,
        timing: _Timing,
        deadline: asyncio.Timeout,
    ) -> None:
        """Each read of the body through the SSE parser, each event timed as it is parsed."""
        parser = SSEParser()
        received = 0
        rescheduled = False
        # Accept-Encoding is identity: the raw bytes are the body, one layer of httpx fewer a piece
        encoded = "content-encoding" in response.headers
        pieces = response.aiter_bytes() if encoded else response.aiter_raw()
        loop = asyncio.get_running_loop()
        read_until = 0.0  # the pieces of the read after a pause are taken until then
        async for piece in pieces:
            received += len(piece)
            if assembler.done:  # what follows [DONE], read for a moment: the connection is kept
                if received > self.max_stream_bytes:
                    return
                continue
            if received > self.max_stream_bytes:
                raise _TooLarge(f"stream larger than {self.max_stream_bytes} bytes")
            for event in parser.feed(piece):
                assembler.feed(event.data, timing.since_sent())
            if not rescheduled and assembler.first_token_s is not None:
                deadline.reschedule(timing.loop_started + self.stream_timeout_s)
                rescheduled = True
            if assembler.failed:
                return  # nothing after an error chunk can change the outcome
            if assembler.done:  # complete: the rest of the body may take DRAIN_S, then it is cut
                deadline.reschedule(loop.time() + DRAIN_S)
                continue
            if assembler.pausable and loop.time() >= read_until:
                await asyncio.sleep(READ_PAUSE_S)
                read_until = loop.time() + _BURST_S
        for event in [] if assembler.done else parser.close():
            assembler.feed(event.data, timing.since_sent())

    async def _early_answer(self, response: httpx.Response) -> _Ending | None:
        """How an HTTP error, or a body that is not an event stream, ends the probe (with the
        provider the error names). None when the response is a 200 event stream to be read."""
        status = response.status_code
        content_type = response.headers.get("content-type", "")
        if status == 200 and content_type.lower().startswith("text/event-stream"):
            return None
        raw, _ = await read_capped(response, MAX_ERROR_BODY_BYTES)
        body = load_json(raw)
        served_by = error_provider(body)
        if status != 200:
            transport = classify_status(status, as_object(body))
            message = http_error_message(status, body, raw, content_type)
            return _Ending(transport, message, served_by=served_by)
        if error_of(body) is not None:  # an error sent with HTTP 200 (seen for upstream 429s)
            transport = classify_status(200, as_object(body))
            return _Ending(transport, error_message(200, body), served_by=served_by)
        shown = content_type or "no content type"
        message = f"wrong content type for a stream: {shown}: {snippet(raw, content_type)}"
        return _Ending(Transport.provider_error, message)

    @staticmethod
    def _attributed(endpoint: Endpoint, providers: tuple[str, ...], status: int | None) -> bool:
        """Whether every provider the answer named is the pinned one (a mismatch is logged)."""
        mismatched = [p for p in providers if not same_provider(p, endpoint.provider_name)]
        if mismatched:
            log.warning(
                "attribution_mismatch",
                model=endpoint.model,
                tag=endpoint.tag,
                expected=endpoint.provider_name,
                served_by=mismatched[0],
                status=status,
            )
        return not mismatched


class _TooLarge(Exception):
    pass


class _Failed(NamedTuple):
    """One failed listing attempt."""

    transport: Transport
    message: str
    retry_after: float | None = None
    connected: bool | None = True  # False: no connection could be opened; None: cut by the deadline


class Completion(NamedTuple):
    """What an equality sample keeps of its request: the text when it completed (else None)
    and the usage it is paid by."""

    content: str | None
    usage: Usage


class _Ending(NamedTuple):
    """How a probe ended when not as its stream said."""

    transport: Transport
    error: str | None
    served_by: str | None = None  # the provider an error body names
    stalled_at: float | None = None  # a stall: the ttft sample, censored at the deadline
    connected: bool = True  # False: no connection to OpenRouter could be opened


class _Exchange(NamedTuple):
    """One pinned request on the wire, before anything names what it was for."""

    timing: _Timing
    status: int | None
    ending: _Ending
    outcome: StreamOutcome
    providers: tuple[str, ...]
    attribution_ok: bool


class _Timing:
    """When the call started, and when its request headers went on the wire (httpcore's trace):
    ttft and reasoning times count from the latter, so connecting is not counted as waiting."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.loop_started = asyncio.get_running_loop().time()
        self.started = clock()
        self.wall_started = time.time()  # for traces: when, on the wall clock, it was sent
        self.sent: float | None = None

    async def trace(self, name: str, info: Mapping[str, object]) -> None:
        if name.endswith("send_request_headers.started"):
            self.sent = self._clock()

    def since_sent(self) -> float:
        return self._clock() - (self.sent if self.sent is not None else self.started)
