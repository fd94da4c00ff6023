"""A misbehaving upstream for the robustness tests: tests/openrouter's raw-TCP WireServer, run on
its own event loop in a background thread, so one server serves a whole module (every hypothesis
example) while each example drives the real client from its own ``asyncio.run``.

Each example registers a :class:`Misbehaviour` under a key and sends it in the request: the chat
body's ``user`` field, else the pinned tag (``provider.only[0]``); for the endpoints listing, the
model slug (``/models/acme/<key>/endpoints``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from wire_server import Reply, Request, WireServer

HANG_S = 5.0  # a hung answer stays silent this long (the clients under test give up far sooner)


@dataclass(frozen=True)
class Misbehaviour:
    """What the server does with one request."""

    status: int = 200
    content_type: str | None = "text/event-stream"
    body: bytes = b""
    piece: int = 64  # bytes per write (one chunk each when chunked)
    chunked: bool = True
    before_head: Literal["answer", "hang", "cut"] = "answer"  # hang/cut: no status line at all
    ending: Literal["end", "cut", "hang"] = "end"  # after the body: clean end, cut, or silence
    headers: dict[str, str] = field(default_factory=dict)


class UpstreamThread:
    """``with UpstreamThread() as up: key = up.add(Misbehaviour(...))``; ``up.base_url``."""

    def __init__(self) -> None:
        self.cases: dict[str, Misbehaviour] = {}
        self.listings: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: WireServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return self._server.base_url

    @property
    def requests(self) -> list[Request]:
        assert self._server is not None
        return self._server.requests

    def add(self, behaviour: Misbehaviour, key: str | None = None) -> str:
        key = key or f"case-{next(self._ids)}"
        self.cases[key] = behaviour
        return key

    def add_listing(self, slug: str, payload: dict[str, Any]) -> None:
        self.listings[slug] = payload

    def __enter__(self) -> UpstreamThread:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.__aexit__(None), self._loop).result(15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> WireServer:
        server = WireServer(self._handle)
        await server.__aenter__()
        return server

    def _key(self, request: Request) -> str:
        if request.method == "GET":
            parts = request.path.split("/")
            return parts[-2] if len(parts) >= 3 and parts[-1] == "endpoints" else ""
        try:
            body = json.loads(request.body)
        except ValueError:
            return ""
        if isinstance(body.get("user"), str):
            return str(body["user"])
        only = (body.get("provider") or {}).get("only") or [""]
        return str(only[0])

    async def _handle(self, request: Request, reply: Reply) -> None:
        key = self._key(request)
        if request.method == "GET" and key in self.listings:
            await reply.send_json(200, self.listings[key])
            return
        behaviour = self.cases.get(key)
        if behaviour is None:
            await reply.send_json(404, {"error": {"code": 404, "message": f"no case {key!r}"}})
            return
        await play(behaviour, reply)


async def _silence(reply: Reply) -> None:
    try:
        await asyncio.wait_for(reply.stop.wait(), HANG_S)
    except TimeoutError:
        pass
    reply.close()


async def play(b: Misbehaviour, reply: Reply) -> None:
    if b.before_head == "hang":
        await _silence(reply)
        return
    if b.before_head == "cut":
        reply.close()
        return
    headers = dict(b.headers)
    if b.content_type is not None:
        headers["Content-Type"] = b.content_type
    if not b.chunked:  # a declared length the body never reaches when it is cut or hangs
        headers["Content-Length"] = str(len(b.body) + (0 if b.ending == "end" else 100))
    await reply.head(b.status, headers, chunked=b.chunked)
    await reply.pieces(b.body, max(1, b.piece))
    if b.ending == "end":
        await reply.end()
    elif b.ending == "cut":
        reply.close()
    else:
        await _silence(reply)


def listing(model: str, tags: dict[str, str]) -> dict[str, Any]:
    """An endpoints listing body: tag -> provider display name."""
    parameters = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs"]
    return {
        "data": {
            "id": model,
            "name": model,
            "endpoints": [
                {
                    "name": f"{name} | {model}",
                    "provider_name": name,
                    "tag": tag,
                    "quantization": "fp8",
                    "context_length": 32768,
                    "max_completion_tokens": 4096,
                    "pricing": {"prompt": "0.0000002", "completion": "0.0000006"},
                    "supported_parameters": [*parameters, "tools", "tool_choice"],
                    "status": 0,
                    "uptime_last_30m": 99.0,
                }
                for tag, name in tags.items()
            ],
        }
    }
