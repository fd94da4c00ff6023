"""A lean HTTP/1.1 client for the streaming probes: an asyncio protocol, httptools, keep-alive.

Why not httpx for the probes: a probe stream is a few hundred small HTTP chunks, and httpx's
stack (httpcore, h11, anyio) spends tens of microseconds of Python on each one, which made the
client cost several milliseconds of CPU per probe and, with dozens of streams at once, delayed
every stream's first token behind the others' parsing. Here the C parser (httptools, installed
with uvicorn[standard]) runs inside ``data_received``, and every body piece is stamped with the
reader's *sink* (SSE parsing and chunk assembly, which read the clock per event) runs right
there, as the bytes arrive, instead of after the task reading the stream has been woken and its
turn has come: the time to first token no longer includes the event loop's queue, and the
reading task is woken only when something it acts on happens (first token, [DONE], an error
chunk, the end of the body).

Failures are raised as the httpx exceptions the rest of the client classifies
(:func:`canary.openrouter.wire.exception_kind`). The endpoints listing goes through it too (a GET,
read whole), so a round never loads httpx's transport stack unless a proxy is configured.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httptools
import httpx
import orjson

Sink = Callable[[bytes], bool]  # consumes a body piece; True when the reader should look


def usable(base_url: str) -> bool:
    """Whether this client can reach `base_url` itself (http or https, no proxy configured)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return True
    return bool(proxy_bypass(parts.hostname))


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        # made by loop.create_connection, so inside the loop; get_running_loop() asks the OS
        # for the process id on every call, so the protocol keeps the loop at hand
        self.loop = asyncio.get_running_loop()
        self._grid = _grid_of(self.loop)
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None
        self.begin()

    # -- state of the current exchange ------------------------------------------------------
    def begin(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.head_done = False
        self.keep_alive = False
        self.complete = False
        self.received = False
        self.error: Exception | None = None
        self.pieces: list[bytes] = []
        self.sink: Sink | None = None
        self.notable = False
        self.coalesce_s = 0.0
        self._received: list[bytes] = []

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        self.received = True
        had_head = self.head_done
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self.error is None:
                self._fail(httpx.RemoteProtocolError(f"invalid HTTP response: {exc}"))
        if self._received:  # every HTTP chunk of this read, to the sink at once
            received, self._received = self._received, []
            self.consume(received[0] if len(received) == 1 else b"".join(received))
        if (
            self.pieces
            or self.notable
            or self.complete
            or self.error is not None
            or self.head_done is not had_head  # a head alone: the stream is open
        ):
            self._wake()
        elif self.coalesce_s and self.transport is not None and not self.closed:
            # Let the next pieces gather in the socket buffer: one read, one parse, for many.
            # Every stream resumes on the same grid of instants, so one wake-up of the event
            # loop reads them all instead of one wake-up per stream.
            self.transport.pause_reading()
            loop, step = self.loop, self.coalesce_s
            instant = (loop.time() // step + 1) * step
            paused = self._grid.get(instant)
            if paused is None:
                self._grid[instant] = paused = []
                loop.call_at(instant, _resume_all, self._grid, instant)
            paused.append(self)

    def _resume(self) -> None:
        if self.transport is not None and not self.closed and not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.complete and self.error is None:
            if self.head_done and self._until_close():
                self.complete = True  # a body delimited by the end of the connection
            elif isinstance(exc, OSError):
                self.error = httpx.ReadError(str(exc) or type(exc).__name__)
            elif self.head_done:
                self.error = httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
            else:
                self.error = httpx.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
        self._wake()

    # -- httptools callbacks ------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:  # an interim response: the real one follows
            self.headers = {}
            return
        self.head_done = True
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self.sink is None:
            self.pieces.append(body)
        else:
            self._received.append(body)

    def consume(self, body: bytes) -> None:
        if self.error is not None or self.sink is None:
            return
        try:
            if self.sink(body):
                self.notable = True
        except Exception as exc:  # the reader's verdict on the bytes (too large, bad framing)
            self._fail(exc)

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True

    # -- helpers ------------------------------------------------------------------------------
    def _until_close(self) -> bool:
        return (
            "content-length" not in self.headers
            and "chunked" not in self.headers.get("transfer-encoding", "").lower()
        )

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        self.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def reusable(self) -> bool:
        return (
            self.complete
            and self.error is None
            and not self.closed
            and self.transport is not None
            and not self.transport.is_closing()
            and self.keep_alive
            and self.headers.get("connection", "").lower() != "close"
        )


Grid = dict[float, list["_Connection"]]  # an instant -> the connections paused until then
# One grid per event loop: one timer per instant resumes every connection paused until then,
# instead of one timer per connection and read.
_GRIDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Grid] = weakref.WeakKeyDictionary()


def _grid_of(loop: asyncio.AbstractEventLoop) -> Grid:
    grid = _GRIDS.get(loop)
    if grid is None:
        _GRIDS[loop] = grid = {}
    return grid


def _resume_all(grid: Grid, instant: float) -> None:
    for connection in grid.pop(instant, ()):
        connection._resume()


class H1Response:
    """The answer being read: status, headers (lower-case names), then the body."""

    def __init__(self, connection: _Connection) -> None:
        self._c = connection

    @property
    def status_code(self) -> int:
        return self._c.status or 0

    @property
    def headers(self) -> dict[str, str]:
        return self._c.headers

    async def _head(self) -> None:
        c = self._c
        while not c.head_done:
            if c.error is not None:
                raise c.error
            await c.wait()

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        c = self._c
        while True:
            if c.pieces:
                batch, c.pieces = c.pieces, []
                for piece in batch:
                    yield piece
                continue
            if c.error is not None:
                raise c.error
            if c.complete:
                return
            await c.wait()

    def coalesce(self, seconds: float) -> None:
        """From now on, after each read, leave the socket alone for `seconds` (once the first
        token is in, nothing needs a finer time: this trades that for far fewer wake-ups)."""
        self._c.coalesce_s = seconds

    async def follow(self, sink: Sink) -> AsyncIterator[None]:
        """From now on the body goes to `sink` as it arrives (inside the protocol's callback,
        all the HTTP chunks of one read at once); yields each time the sink returned True,
        returns at the end of the body."""
        c = self._c
        pending, c.pieces = c.pieces, []
        c.sink = sink
        for piece in pending:
            c.consume(piece)
        while True:
            if c.notable:
                c.notable = False
                yield
                continue
            if c.error is not None:
                raise c.error
            if c.complete:
                return
            await c.wait()

    async def finish(self, timeout_s: float) -> None:
        """Wait a moment for the end of the body so that the connection can be reused."""
        c = self._c
        c.sink = None
        c.coalesce_s = 0.0
        c._resume()
        try:
            async with asyncio.timeout(timeout_s):
                while not c.complete and c.error is None:
                    c.pieces.clear()
                    await c.wait()
        except TimeoutError:
            return
        c.pieces.clear()


class H1Pool:
    """Keep-alive HTTP/1.1 connections to one origin, at most `max_connections` at once."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        connect_timeout_s: float,
        max_connections: int,
    ) -> None:
        parts = urlsplit(base_url)
        self._host = parts.hostname or ""
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        netloc = parts.netloc.rpartition("@")[2]
        fixed = {"Host": netloc, "Accept": "*/*", "Connection": "keep-alive", **headers}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._connect_timeout_s = connect_timeout_s
        self._max = max_connections
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._tls and self._ssl is None:
            self._ssl = ssl.create_default_context()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                _, connection = await loop.create_connection(
                    _Connection,
                    self._host,
                    self._port,
                    ssl=self._ssl if self._tls else None,
                    server_hostname=self._host if self._tls else None,
                )
        except TimeoutError:
            message = f"no connection within {self._connect_timeout_s:g} s"
            raise httpx.ConnectTimeout(message) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return connection

    def _reuse(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and not connection.transport.is_closing():  # type: ignore[union-attr]
                connection.begin()
                return connection
        return None

    def post(
        self, path: str, body: bytes, on_sent: Callable[[], None]
    ) -> AbstractAsyncContextManager[H1Response]:
        """POST `body` (JSON) to `path` under the base URL; yields once the head has arrived."""
        request = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n".encode("latin-1")
            + self._fixed
            + b"Content-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        return self._exchange(request, on_sent)

    def get(self, path: str) -> AbstractAsyncContextManager[H1Response]:
        """GET `path` under the base URL; yields once the head has arrived."""
        request = f"GET {self._prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._fixed + b"\r\n"
        return self._exchange(request, _nothing)

    @asynccontextmanager
    async def _exchange(
        self, request: bytes, on_sent: Callable[[], None]
    ) -> AsyncIterator[H1Response]:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max)
        async with self._slots:
            connection: _Connection | None = None
            try:
                for _ in range(2):
                    reused = self._reuse()
                    connection = reused or await self._open()
                    on_sent()
                    connection.transport.write(request)  # type: ignore[union-attr]
                    response = H1Response(connection)
                    try:
                        await response._head()
                        break
                    except httpx.HTTPError:
                        # a kept-alive connection the server had closed: once, on a new one
                        if reused is None or connection.received:
                            raise
                        connection.close()
                yield response
            finally:
                if connection is not None:
                    if connection.reusable():
                        self._idle.append(connection)
                    else:
                        connection.close()

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()


def _nothing() -> None:
    return None


def encode_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON, as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``."""
    return orjson.dumps(payload)
