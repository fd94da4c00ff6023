"""``GET /v1/ignore-list``, the hot path apps poll: a raw ASGI endpoint answered from memory."""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from canary.api.common import error
from canary.core.needs import KNOWN_NEEDS, UnknownNeed, parse_needs
from canary.ignorelist import IgnoreListService, ListUnavailable, UnknownModel

CACHE_CONTROL = "public, max-age=15"


class IgnoreListEndpoint:
    """``GET /v1/ignore-list``: a raw ASGI endpoint, the hot path apps poll.

    It answers from memory with pre-built headers per document (no Request/Response objects),
    so it serves about as fast as ``/healthz``; errors are the same JSON as everywhere else.
    """

    def __init__(self, ignore: IgnoreListService) -> None:
        self.ignore = ignore
        self._headers: dict[str, list[tuple[bytes, bytes]]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"")
        model = _query_value(query, "model")
        if not model:
            await error(400, "the query parameter 'model' is required")(scope, receive, send)
            return
        try:
            needs = parse_needs(",".join(_query_values(query, "needs")))  # every value given
        except UnknownNeed as exc:
            await error(400, str(exc), known=list(KNOWN_NEEDS))(scope, receive, send)
            return
        try:
            published = self.ignore.published(model, needs)
        except UnknownModel as exc:
            await error(404, str(exc), known=list(exc.known))(scope, receive, send)
            return
        except ListUnavailable as exc:
            await error(503, str(exc))(scope, receive, send)
            return
        headers = self._headers.get(published.etag)
        if headers is None:
            if len(self._headers) > 256:
                self._headers.clear()
            headers = self._headers[published.etag] = [
                (b"etag", published.etag.encode()),
                (b"cache-control", CACHE_CONTROL.encode()),
            ]
        if _matches(_header(scope, b"if-none-match"), published.etag):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(published.body)).encode()),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": published.body})


def _query_values(query_string: bytes, name: str) -> list[str]:
    """Every non-blank value of ``name``, in order (``?needs=a&needs=b`` is both a and b)."""
    values = parse_qs(query_string.decode("latin-1"), keep_blank_values=True).get(name, ())
    return [v.strip() for v in values if v.strip()]


def _query_value(query_string: bytes, name: str) -> str:
    """The first non-blank value of ``name`` ("" without one)."""
    return next(iter(_query_values(query_string, name)), "")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _matches(header: str | None, etag: str) -> bool:
    """``If-None-Match`` against the current tag by weak comparison (RFC 9110 13.1.2): the opaque
    tags are compared with any ``W/`` left aside."""
    if not header:
        return False
    candidates = [part.strip() for part in header.split(",")]
    opaque = etag.removeprefix("W/")
    return "*" in candidates or any(c.removeprefix("W/") == opaque for c in candidates)
