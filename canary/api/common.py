"""What the API's handlers share: JSON errors, the query parameters, and store access off the loop.

Every error answers JSON ``{"error": ...}``: 400 for a malformed request, 422 for a well-formed
one that is invalid, 401/403 for admin auth, 404 for unknown names, 503 when the store cannot be
read (except the ignore list, which fails static).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Annotated, ParamSpec, TypeVar

from fastapi import Query
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic_core import ErrorDetails
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from canary.api.schemas import MAX_BODY, ErrorBody
from canary.config.settings import Settings
from canary.service.ignore_list import IgnoreListService, UnknownModel
from canary.service.logs import get_logger
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store
from canary.views.known import UnknownProvider, known_models

log = get_logger("canary.api")
P = ParamSpec("P")
R = TypeVar("R")

ModelParam = Annotated[str, Query(description="OpenRouter model id, author/slug.")]
OptionalModel = Annotated[str | None, Query(description="OpenRouter model id, author/slug.")]

_ERROR_TEXT = {
    400: "Malformed request (missing parameter, bad JSON, bad number or time).",
    401: "Missing or wrong admin token (report token, for reports).",
    403: "Admin calls (reports) are disabled: no admin (report) token is configured.",
    404: "Unknown model, provider or id; the error names the known ones.",
    409: "Refused: it would leave fewer usable endpoints than the model's capacity floor (or "
    "the model was never listed); the error names the floor and the usable count. Send "
    '`"force": true` to do it anyway (audited as a floor breach).',
    413: f"The request body is larger than {MAX_BODY} bytes.",
    422: "Well-formed but invalid request.",
    429: "Too many reports (per token or per endpoint): Retry-After says when to send again.",
    503: "The store is unreachable (or the list was never read).",
}
# Query and path values the request could be read with but that break a rule of their own: 422.
_UNPROCESSABLE = frozenset({"string_too_long"})


def errors(*codes: int) -> dict[int | str, dict[str, str | type[ErrorBody]]]:
    """The documented error answers of a route, each the JSON of :class:`ErrorBody`, and any
    other (an unknown path, a wrong method) in the same JSON."""
    return {
        **{code: {"model": ErrorBody, "description": _ERROR_TEXT[code]} for code in codes},
        "default": {"model": ErrorBody, "description": "Every other error, in the same JSON."},
    }


class ApiError(Exception):
    """An answer other than success: ``status`` and the JSON error body."""

    def __init__(self, status: int, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(error=message, hint=hint)


class StoreDown(Exception):
    pass


class CappedRequest(Request):
    """A request whose body is read as it streams in and refused (413) past :data:`MAX_BODY`."""

    async def body(self) -> bytes:
        if not hasattr(self, "_body"):
            raw = bytearray()
            async for chunk in self.stream():
                raw += chunk
                if len(raw) > MAX_BODY:  # FastAPI passes an HTTPException through as it is
                    raise HTTPException(413, f"the body is larger than {MAX_BODY} bytes")
            self._body = bytes(raw)
        return self._body


class CappedRoute(APIRoute):
    """A route that reads its request's body through :class:`CappedRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[None, None, Response]]:
        handler = super().get_route_handler()

        async def capped(request: Request) -> Response:
            return await handler(CappedRequest(request.scope, request.receive))

        return capped


def error(status: int, message: str, known: Sequence[str] | None = None) -> JSONResponse:
    body = ErrorBody(error=message, known=None if known is None else list(known))
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status)


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

    async def _model(self, given: str | None) -> str:
        model = (given or "").strip()
        if not model:
            raise ApiError(400, "the query parameter 'model' is required")
        known = await self._store(self._models)
        if model not in known:
            raise UnknownModel(model, known)
        return model

    async def _optional_model(self, given: str | None) -> str | None:
        return await self._model(given) if given and given.strip() else None

    async def _refresh(self) -> None:
        await run_in_threadpool(self.ignore.refresh)


def _problem(detail: ErrorDetails) -> tuple[int, str]:
    """One validation problem as a status and a readable line naming the value."""
    where, *path = detail["loc"]
    name = ".".join(str(p) for p in path) or "the body"
    kind = detail["type"]
    if kind == "json_invalid":
        return 400, "the body is not valid JSON"
    if kind == "missing" and where != "body":
        return 400, f"the {where} parameter {name!r} is required"
    ctx = detail.get("ctx") or {}
    message = f"{name} {ctx['error']}" if kind == "value_error" else f"{name}: {detail['msg']}"
    return (422 if where == "body" or kind in _UNPROCESSABLE else 400), message


async def invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = [_problem(d) for d in exc.errors()]
    status = min(status for status, _ in problems)
    return error(status, "; ".join(message for _, message in problems))


async def api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body.model_dump(exclude_none=True), status_code=exc.status)


async def unknown_name(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, (UnknownModel, UnknownProvider))
    return error(404, str(exc), known=exc.known)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def store_down(request: Request, exc: Exception) -> Response:
    return error(503, "the store is unreachable; try again shortly")


Handler = Callable[[Request, Exception], Coroutine[None, None, Response]]
EXCEPTION_HANDLERS: dict[int | type[Exception], Handler] = {
    ApiError: api_error,
    RequestValidationError: invalid_request,
    UnknownModel: unknown_name,
    UnknownProvider: unknown_name,
    StoreDown: store_down,
    HTTPException: http_error,
}
