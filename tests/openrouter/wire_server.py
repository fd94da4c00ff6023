"""A test-only HTTP/1.1 server on loopback that writes exactly the bytes a test asks for.

It runs in the test's own event loop (``asyncio.start_server``), so a handler can replay fixture
bytes in arbitrary pieces, send HTML error pages, cut the connection mid-body, or hang forever.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from shared_data import CAPTURES

FIXTURES = CAPTURES.path


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    writer: asyncio.StreamWriter
    stop: asyncio.Event
    closed: bool = False
    _chunked: bool = field(default=False, repr=False)

    async def head(
        self, status: int, headers: dict[str, str] | None = None, *, chunked: bool = True
    ) -> None:
        lines = [f"HTTP/1.1 {status} X"]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        self._chunked = chunked
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def piece(self, data: bytes) -> None:
        """One piece of the body (a chunk when chunked)."""
        if not data:
            return
        if self._chunked:
            self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.writer.write(data)
        await self.writer.drain()

    async def pieces(self, data: bytes, size: int) -> None:
        for start in range(0, len(data), size):
            await self.piece(data[start : start + size])

    async def end(self) -> None:
        if self._chunked:
            self.writer.write(b"0\r\n\r\n")
            await self.writer.drain()

    async def send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = {
            "Content-Type": content_type,
            "Content-Length": str(len(body)),
            **(headers or {}),
        }
        await self.head(status, all_headers, chunked=False)
        self.writer.write(body)
        await self.writer.drain()

    async def send_json(
        self, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        await self.send(status, json.dumps(payload).encode(), headers=headers)

    async def hang(self) -> None:
        """Keep the connection open and silent until the server stops."""
        await self.stop.wait()
        self.close()

    def close(self) -> None:
        """Cut the connection (an abrupt end, not a clean end of body)."""
        self.closed = True
        self.writer.close()


Handler = Callable[[Request, Reply], Awaitable[None]]


class WireServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.connections = 0
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    async def __aenter__(self) -> WireServer:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()  # ends every connection: handlers see EOF or a reset
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=2)
            for task in pending:
                task.cancel()
        await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self.connections += 1
        self._writers.add(writer)
        try:
            while not self._stop.is_set():
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                reply = Reply(writer, self._stop)
                await self.handler(request, reply)
                if reply.closed:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            if not writer.is_closing():
                writer.close()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Request(method, path, headers, body)


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def sse(*chunks: dict[str, Any] | str, done: bool = True, keepalive: bool = True) -> bytes:
    """An event stream body: each dict becomes a data event, each str is written as-is."""
    out: list[str] = [": OPENROUTER PROCESSING\n\n"] if keepalive else []
    out += [c if isinstance(c, str) else f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def chunk(
    content: str | None = None,
    *,
    provider: str = "DeepInfra",
    finish: str | None = None,
    reasoning: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        delta["reasoning"] = reasoning
    return {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "acme/m",
        "provider": provider,
        "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}
        ],
        **extra,
    }


def usage_chunk(
    prompt: int = 10, completion: int = 5, cost: float = 0.0001, provider: str = "DeepInfra"
) -> dict[str, Any]:
    return {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "acme/m",
        "provider": provider,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "cost": cost,
        },
    }
