"""What the API's handlers share: JSON errors, request parsing, and store access off the loop.

Every error answers JSON ``{"error": ...}``: 400 for a malformed request, 422 for a well-formed
one that is invalid, 401/403 for admin auth, 404 for unknown names, 503 when the store cannot be
read (except the ignore list, which fails static).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from canary.ignorelist import IgnoreListService, UnknownModel
from canary.logs import get_logger
from canary.store.engine import STORE_ERRORS
from canary.views.known import UnknownProvider, known_models

if TYPE_CHECKING:
    from canary.settings import Settings
    from canary.store.repository import Store

log = get_logger("canary.api")
P = ParamSpec("P")
R = TypeVar("R")
MAX_LIMIT = 1000
MAX_REASON = 500
MAX_BODY = 64 * 1024


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class StoreDown(Exception):
    pass


def error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def limit_param(request: Request, default: int) -> int:
    raw = request.query_params.get("limit")
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(400, f"limit must be an integer, not {raw[:40]!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise BadRequest(400, f"limit must be between 1 and {MAX_LIMIT}")
    return value


def bool_param(request: Request, name: str) -> bool:
    """A boolean query parameter: ``true``/``1`` or ``false``/``0`` (absent: false)."""
    raw = request.query_params.get(name, "").strip().lower()
    if raw in ("", "false", "0"):
        return False
    if raw in ("true", "1"):
        return True
    raise BadRequest(400, f"{name} must be true or false, not {raw[:40]!r}")


def text_field(body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(422, f"{key!r} must be a non-empty string")
    if len(value) > MAX_REASON:
        raise BadRequest(422, f"{key!r} is longer than {MAX_REASON} characters")
    return value.strip()


class Handlers:
    """The settings, store, ignore-list service and clock every handler group works with."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        ignore: IgnoreListService,
        clock: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.store = store
        self.ignore = ignore
        self.clock = clock
        self.started_at = clock()

    async def _store(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``fn(*args, **kwargs)`` off the event loop; a store error becomes :class:`StoreDown`."""
        try:
            return await run_in_threadpool(fn, *args, **kwargs)
        except STORE_ERRORS as exc:  # anything else is a bug: a 500, not "store unreachable"
            log.warning("store_unavailable", error=type(exc).__name__)
            raise StoreDown() from exc

    def _models(self) -> list[str]:
        return known_models(self.settings.model_ids, self.store)

    async def _model(self, request: Request) -> str:
        model = request.query_params.get("model", "").strip()
        if not model:
            raise BadRequest(400, "the query parameter 'model' is required")
        known = await self._store(self._models)
        if model not in known:
            raise UnknownModel(model, known)
        return model

    async def _json_body(self, request: Request) -> dict[str, Any]:
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise BadRequest(413, f"the body is larger than {MAX_BODY} bytes")
        try:
            body = json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError):
            raise BadRequest(400, "the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise BadRequest(422, "the body must be a JSON object")
        return body

    async def _refresh(self) -> None:
        await run_in_threadpool(self.ignore.refresh)


async def bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadRequest)
    return error(exc.status, exc.message)


async def unknown_name(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, (UnknownModel, UnknownProvider))
    return error(404, str(exc), known=list(exc.known))


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def store_down(request: Request, exc: Exception) -> Response:
    return error(503, "the store is unreachable; try again shortly")
