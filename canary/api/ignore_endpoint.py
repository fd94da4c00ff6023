"""``GET /v1/ignore-list``, the hot path apps poll: answered from memory, its body and headers
built once per published document, its parameters taken without FastAPI's dependency solver."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated

from fastapi import Header, Query
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from canary.api.common import error
from canary.core.needs import KNOWN_NEEDS, UnknownNeed, parse_needs
from canary.core.profiles import UnknownProfile
from canary.service.ignore_list import (
    IgnoreListService,
    ListUnavailable,
    Published,
    UnknownModel,
    variant_key,
)
from canary.store._reports import DocumentRow
from canary.store.engine import STORE_ERRORS
from canary.views.bodies import IgnoreListsAnswer, joined_answer
from canary.views.records import iso, parse_when

CACHE_CONTROL = "public, max-age=15"
NEEDS = (
    "Comma-separated capabilities the app uses (structured_outputs, tools). A quarantine caused "
    "only by contracts of capabilities it does not need is left out of its list; ttft, refusal, "
    "language and hygiene always apply, and so do built-in and runtime entries. Repeated "
    "(needs=a&needs=b), every value counts. The capacity floor is held on each list itself "
    "(usable_endpoints, withheld and floor_breached are its own). Without it: the full list. An "
    "unknown need is a 400 naming the known ones."
)
MODELS = (
    "OpenRouter model id, author/slug. Repeated (model=a&model=b): one list per model, in the "
    'order asked (a repeat counts once), answered as {"lists": [...]} under one ETag; a single '
    "model answers its list alone. An unknown one is a 404 naming the known ones."
)
PROFILE = (
    "A task profile of the settings ([[profiles]]): its list adds an entry of layer "
    "requirement for each requirement an endpoint misses (withheld first to hold the floor); "
    "needs= adds to its needs. Its own ETag per (model, profile). An unknown one is a 404 "
    "naming the known ones."
)
AT = (
    "ISO-8601 time: what was published for the model (its needs, its profile) at that moment, "
    "and why (each entry's layer and reason), from the history every published document, each "
    "needs and profile variant, is kept in (retention_days); one model. A 404 when nothing was "
    "recorded by then."
)
History = Callable[[str, str, datetime], DocumentRow | None]
ETAG = (
    "Weak, over everything the list says except generated_at: the same on every replica while "
    "the list is unchanged. For several models, one tag over all of their lists."
)


class IgnoreListRoute(APIRoute):
    """The route of :meth:`IgnoreListEndpoint.__call__`. FastAPI generates its document from
    the endpoint's signature; a request hands the endpoint its parameters straight from the
    query and the headers (all strings, checked by the endpoint), without the dependency
    solver, which costs more than the rest of the answer: this route serves about as fast as
    ``/healthz``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[None, None, Response]]:
        endpoint = self.endpoint
        assert isinstance(endpoint, IgnoreListEndpoint)

        async def handle(request: Request) -> Response:
            query = request.query_params
            return await endpoint(
                model=query.getlist("model"),
                needs=query.getlist("needs"),
                profile=query.get("profile"),
                if_none_match=request.headers.get("if-none-match"),
                at=query.get("at"),
            )

        return handle


class IgnoreListEndpoint:
    """The merged ignore list of one model or several, from memory (it fails static: while the
    store is unreachable it serves the last good lists, marked stale)."""

    def __init__(self, ignore: IgnoreListService, history: History | None = None) -> None:
        """``history``: the published documents by time (``?at=T``), read off the loop."""
        self.ignore = ignore
        self.history = history
        self._headers: dict[str, dict[str, str]] = {}  # by ETag
        self._joined: dict[
            tuple[tuple[str, ...], frozenset[str], str | None], IgnoreListsAnswer
        ] = {}

    async def __call__(
        self,
        model: Annotated[list[str], Query(description=MODELS)],
        needs: Annotated[list[str] | None, Query(description=NEEDS)] = None,
        profile: Annotated[str | None, Query(description=PROFILE)] = None,
        if_none_match: Annotated[str | None, Header()] = None,
        at: Annotated[str | None, Query(description=AT)] = None,
    ) -> Response:
        models = tuple(dict.fromkeys(m.strip() for m in model))
        if not models or "" in models:
            return error(400, "the query parameter 'model' is required")
        try:
            wanted = parse_needs(",".join(needs or ()))  # every value given
        except UnknownNeed as exc:
            return error(400, str(exc), known=KNOWN_NEEDS)
        if at is not None:
            return await self._then(models, wanted, profile, at)
        try:
            parts = tuple(self.ignore.published(m, wanted, profile) for m in models)
        except (UnknownModel, UnknownProfile) as exc:
            return error(404, str(exc), known=exc.known)
        except ListUnavailable as exc:
            return error(503, str(exc))
        if len(parts) == 1:  # the hot path: the published body as it is
            body, etag = parts[0].body, parts[0].etag
        else:
            body, etag = self._join((models, wanted, profile), parts)
        headers = self._headers.get(etag)
        if headers is None:
            if len(self._headers) > 256:
                self._headers.clear()
            headers = self._headers[etag] = {"etag": etag, "cache-control": CACHE_CONTROL}
        if _matches(if_none_match, etag):
            return Response(status_code=304, headers=headers)
        return Response(body, headers=headers, media_type="application/json")

    async def _then(
        self, models: tuple[str, ...], needs: frozenset[str], profile: str | None, at: str
    ) -> Response:
        """What was published for one model (its needs, its profile) at ``at``, from the
        history."""
        try:
            when = parse_when(at)
        except ValueError:
            return error(400, f"at {at[:40]!r} is not an ISO-8601 time")
        if len(models) != 1 or self.history is None:
            return error(400, "at= reads the history of one model, on a daemon's API")
        try:
            row = await run_in_threadpool(
                self.history, models[0], variant_key(needs, profile), when
            )
        except STORE_ERRORS:
            return error(503, "the store is unreachable; try again shortly")
        if row is None:
            cut = "" if profile is None else f" (profile {profile!r})"
            return error(404, f"nothing was recorded as published for {models[0]!r}{cut} at {at}")
        body = {"model": row.model, "at": iso(when), "published_at": iso(row.at),
                "etag": row.etag, "document": row.body}  # fmt: skip
        return JSONResponse(body)

    def _join(
        self, key: tuple[tuple[str, ...], frozenset[str], str | None], parts: tuple[Published, ...]
    ) -> tuple[bytes, str]:
        """Several lists in one body, joined once per set of publications."""
        cached = self._joined.get(key)
        if cached is None or any(a is not b for a, b in zip(cached.parts, parts, strict=True)):
            if len(self._joined) > 256:
                self._joined.clear()
            cached = self._joined[key] = joined_answer(parts)
        return cached.body, cached.etag


def _matches(header: str | None, etag: str) -> bool:
    """``If-None-Match`` against the current tag by weak comparison (RFC 9110 13.1.2): the opaque
    tags are compared with any ``W/`` left aside."""
    if not header:
        return False
    candidates = [part.strip() for part in header.split(",")]
    opaque = etag.removeprefix("W/")
    return "*" in candidates or any(c.removeprefix("W/") == opaque for c in candidates)
