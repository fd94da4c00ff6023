"""The HTTP API (Starlette): the ignore list from memory, read views over the store, admin calls,
health, metrics, the OpenAPI document and the status page. Store calls run in the thread pool.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from canary import metrics
from canary.api.admin import AdminHandlers
from canary.api.common import (
    BadRequest,
    Handlers,
    StoreDown,
    bad_request,
    bool_param,
    http_error,
    limit_param,
    store_down,
    unknown_name,
)
from canary.api.ignore_endpoint import IgnoreListEndpoint
from canary.api.openapi import openapi_document
from canary.api.page_data import next_slot
from canary.core.identity import InvalidTag
from canary.core.probing import Probing, fleet_probing
from canary.ignorelist import IgnoreListService, UnknownModel, utc_now
from canary.metrics_store import StoreMetrics, list_figures
from canary.store.engine import STORE_ERRORS
from canary.views.bodies import (
    audit_body,
    exclusions_body,
    history_body,
    providers_body,
    quarantines_body,
    rounds_body,
)
from canary.views.cost import cost_view
from canary.views.known import UnknownProvider, require_provider
from canary.views.providers import provider_views
from canary.views.records import iso, parse_when

if TYPE_CHECKING:
    from canary.settings import Settings
    from canary.store.repository import Store


class _Api(AdminHandlers, Handlers):
    def __init__(
        self,
        settings: Settings,
        store: Store,
        ignore: IgnoreListService,
        clock: Callable[[], datetime],
        next_round: Callable[[datetime], datetime | None] | None,
    ) -> None:
        super().__init__(settings, store, ignore, clock)
        self.openapi_body = json.dumps(openapi_document()).encode()
        self.next_round = next_round or next_slot(settings)
        self.fleet_metrics = StoreMetrics(
            store,
            settings.model_ids,
            ignore.builtin,
            degraded_p95_s=settings.latency_degraded_p95_s,
            controls=settings.model_controls,
        )

    async def providers(self, request: Request) -> Response:
        model = await self._model(request)
        now = self.clock()
        views = await self._store(
            provider_views,
            self.store,
            model,
            builtin=self.ignore.builtin,
            now=now,
            degraded_p95_s=self.settings.latency_degraded_p95_s,
            controls=self.settings.model_controls,
        )
        spend = await self._store(
            cost_view, self.store, [model], now, self.settings.daily_budget_usd
        )
        return JSONResponse(providers_body(model, now, views, spend))

    async def cost(self, request: Request) -> Response:
        now = self.clock()
        models = await self._store(self._models)
        spend = await self._store(
            cost_view, self.store, models, now, self.settings.daily_budget_usd
        )
        return JSONResponse({"at": iso(now), **spend})

    async def rounds(self, request: Request) -> Response:
        model = await self._model(request)
        limit = limit_param(request, 20)
        return JSONResponse(await self._store(rounds_body, self.store, model, limit))

    async def history(self, request: Request) -> Response:
        """One endpoint's round verdicts and contract results, newest first."""
        model = await self._model(request)
        provider = request.query_params.get("provider", "").strip()
        if not provider:
            raise BadRequest(400, "the query parameter 'provider' is required")
        limit = limit_param(request, 30)
        try:
            await self._store(require_provider, self.store, model, provider)
        except InvalidTag as exc:
            raise BadRequest(400, str(exc)) from None
        return JSONResponse(await self._store(history_body, self.store, model, provider, limit))

    async def exclusions(self, request: Request) -> Response:
        """The built-in and runtime entries in force (``?model=`` narrows to one model)."""
        model = await self._optional_model(request)
        body = await self._store(
            exclusions_body, self.store, self.ignore.builtin, model, self.clock()
        )
        return JSONResponse(body)

    async def quarantines(self, request: Request) -> Response:
        """The quarantines in force, with their causes and whether the floor withholds them
        (``?all=true``: every quarantine, ended ones too)."""
        model = await self._optional_model(request)
        include_ended = bool_param(request, "all")
        body = await self._store(
            quarantines_body, self.store, model, self.clock(), include_ended=include_ended
        )
        return JSONResponse(body)

    async def _optional_model(self, request: Request) -> str | None:
        if not request.query_params.get("model", "").strip():
            return None
        return await self._model(request)

    async def audit(self, request: Request) -> Response:
        model = request.query_params.get("model", "").strip() or None
        since_raw = request.query_params.get("since", "").strip()
        since = None
        if since_raw:
            try:
                since = parse_when(since_raw)
            except ValueError:
                raise BadRequest(
                    400, f"since is not an ISO-8601 time: {since_raw[:40]!r}"
                ) from None
        limit = limit_param(request, 200)
        return JSONResponse(await self._store(audit_body, self.store, model, since, limit))

    # -- operations --------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        """Ready: the store answers, the list was read, a round finished lately. A probing
        problem (every probe of the latest rounds stopped at OpenRouter) is named in the body
        but leaves the replica ready: it still serves the list apps need."""
        now = self.clock()
        reasons: list[str] = []
        window = timedelta(minutes=3 * self.settings.interval_minutes)
        reachable = await run_in_threadpool(_ping, self.store)
        last_round = None
        problems: dict[str, Probing | None] = {}
        if not reachable:
            reasons.append("the store is unreachable")
        else:
            try:
                last_round = await run_in_threadpool(self.store.last_finished_round_at)
                problems = await run_in_threadpool(
                    self.store.probing_problems, self.settings.model_ids, now - window
                )
            except STORE_ERRORS:
                reasons.append("the store is unreachable")
        if reachable and last_round is None and now - self.started_at > window:
            reasons.append(f"no round has finished since start ({iso(self.started_at)})")
        if last_round is not None and now - last_round > window and now - self.started_at > window:
            reasons.append(f"the last round finished at {iso(last_round)}, more than {window} ago")
        if self.ignore.last_refresh_at is None:
            reasons.append("the ignore list has not been read from the store yet")
        probing = fleet_probing(list(problems.values()))
        body = {
            "ready": not reasons,
            "reasons": reasons,
            "last_round_at": iso(last_round),
            "ignore_list_stale": self.ignore.stale,
            "probing": probing,
            "probing_models": sorted(m for m, p in problems.items() if p is not None),
        }
        return JSONResponse(body, status_code=200 if not reasons else 503)

    async def metrics(self, request: Request) -> Response:
        body, content_type = await run_in_threadpool(self._metrics_text, self.clock())
        return Response(body, headers={"Content-Type": content_type})

    def _metrics_text(self, now: datetime) -> tuple[bytes, str]:
        """Never a 5xx for want of the store: its figures are the last good ones (re-read at
        most every 30 s), the lists' come from memory. Off the event loop: at 2,000 endpoints
        the text alone takes a fifth of a second."""
        if self.fleet_metrics.due(now):
            self.fleet_metrics.refresh(now)
        fleet = metrics.FleetCollector(
            self.fleet_metrics.figures,
            list_figures(self.ignore),
            metrics.FleetSettings(
                round_interval_s=self.settings.interval_minutes * 60,
                daily_budget_usd=self.settings.daily_budget_usd,
            ),
            now,
            store_up=self.fleet_metrics.up,
        )
        return metrics.render(fleet)

    async def openapi(self, request: Request) -> Response:
        return Response(self.openapi_body, media_type="application/json")

    async def status_page(self, request: Request) -> Response:
        from canary.api.page import render
        from canary.api.page_data import gather

        now = self.clock()
        context = await run_in_threadpool(
            gather,
            self.settings,
            self.store,
            self.ignore,
            now,
            next_round_at=self.next_round(now),
        )
        return HTMLResponse(render(context))


def _ping(store: Store) -> bool:
    return store.ping()  # it answers False for the store's own errors


def create_app(
    settings: Settings,
    store: Store,
    ignore_service: IgnoreListService,
    *,
    clock: Callable[[], datetime] = utc_now,
    next_round: Callable[[datetime], datetime | None] | None = None,
) -> Starlette:
    """The ASGI app. ``store`` is a :class:`canary.store.repository.Store` (or anything alike).
    ``next_round``: when the next round starts, for the status page (default: the next slot;
    None from it: no round is scheduled, as once the demo has run its rounds)."""
    api = _Api(settings, store, ignore_service, clock, next_round)
    routes = [
        Route("/v1/ignore-list", IgnoreListEndpoint(ignore_service), methods=["GET"]),
        Route("/", api.status_page, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/readyz", api.readyz, methods=["GET"]),
        Route("/metrics", api.metrics, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/v1/providers", api.providers, methods=["GET"]),
        Route("/v1/rounds", api.rounds, methods=["GET"]),
        Route("/v1/history", api.history, methods=["GET"]),
        Route("/v1/cost", api.cost, methods=["GET"]),
        Route("/v1/audit", api.audit, methods=["GET"]),
        Route("/v1/exclusions", api.exclusions, methods=["GET"]),
        Route("/v1/quarantines", api.quarantines, methods=["GET"]),
        Route("/v1/quarantines/release", api.release, methods=["POST"]),
        Route("/v1/exclusions", api.add_exclusion, methods=["POST"]),
        Route("/v1/exclusions/{id}", api.remove_exclusion, methods=["DELETE"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            BadRequest: bad_request,
            UnknownModel: unknown_name,
            UnknownProvider: unknown_name,
            StoreDown: store_down,
            HTTPException: http_error,
        },
    )
    app.state.api = api
    return app
