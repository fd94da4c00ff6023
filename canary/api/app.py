"""The HTTP API (FastAPI): the ignore list from memory, read views over the store, admin calls,
health, metrics, the status page, and the OpenAPI document FastAPI generates from the routes and
their models (:mod:`canary.api.schemas`). Store calls run in the thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import Depends, FastAPI, Query
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from canary import __version__
from canary.api import schemas
from canary.api.admin import AdminHandlers
from canary.api.common import (
    EXCEPTION_HANDLERS,
    ApiError,
    CappedRoute,
    Handlers,
    ModelParam,
    OptionalModel,
    errors,
)
from canary.api.ignore_endpoint import ETAG, IgnoreListEndpoint, IgnoreListRoute
from canary.api.page import render
from canary.api.page_data import gather, next_slot
from canary.api.reports import ReportHandlers
from canary.api.schemas import Flag, Limit, When
from canary.config.settings import Settings
from canary.core.identity import InvalidTag
from canary.core.probing import Probing, fleet_probing
from canary.service import metrics
from canary.service.fleet_figures import StoreMetrics, list_figures
from canary.service.ignore_list import IgnoreListService, utc_now
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store
from canary.views.bodies import (
    AuditBody,
    ExclusionsBody,
    HistoryBody,
    MaintenanceBody,
    ProvidersBody,
    QuarantinesBody,
    RoundsBody,
    audit_body,
    exclusions_body,
    history_body,
    maintenance_body,
    providers_body,
    quarantines_body,
    rounds_body,
)
from canary.views.cost import CostBody, cost_view
from canary.views.known import require_provider
from canary.views.providers import provider_views
from canary.views.records import iso


class _Api(AdminHandlers, ReportHandlers, Handlers):
    def __init__(
        self,
        settings: Settings,
        store: Store,
        ignore: IgnoreListService,
        clock: Callable[[], datetime],
        next_round: Callable[[datetime], datetime | None] | None,
    ) -> None:
        super().__init__(settings, store, ignore, clock)
        self.next_round = next_round or next_slot(settings)
        self.fleet_metrics = StoreMetrics(
            store,
            settings.model_ids,
            ignore.builtin,
            degraded_p95_s=settings.latency_degraded_p95_s,
            controls=settings.model_controls,
        )

    async def providers(self, model: ModelParam) -> ProvidersBody:
        """Each provider's state, failing rounds, last results and ttft, worst state first, and
        the model's probe cost."""
        model = await self._model(model)
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
        checked = await self._store(self.store.latest_equality, [model])
        return providers_body(model, now, views, spend, checked)

    async def cost(self) -> CostBody:
        """Probe cost: the latest round and the last 24 h per model, today, the budget."""
        now = self.clock()
        models = await self._store(self._models)
        spend = await self._store(
            cost_view, self.store, models, now, self.settings.daily_budget_usd
        )
        return {"at": iso(now), "day": spend["day"], "models": spend["models"]}

    async def rounds(self, model: ModelParam, limit: Limit = 20) -> RoundsBody:
        """Recent rounds of a model, newest first."""
        model = await self._model(model)
        return await self._store(rounds_body, self.store, model, limit)

    async def history(
        self,
        model: ModelParam,
        provider: Annotated[str, Query(description="The endpoint's tag (or its provider slug).")],
        limit: Limit = 30,
    ) -> HistoryBody:
        """One endpoint's round verdicts and contract results, newest first (what
        `canary history --json` prints)."""
        model = await self._model(model)
        provider = provider.strip()
        if not provider:
            raise ApiError(400, "the query parameter 'provider' is required")
        try:
            await self._store(require_provider, self.store, model, provider)
        except InvalidTag as exc:
            raise ApiError(400, str(exc)) from None
        return await self._store(history_body, self.store, model, provider, limit)

    async def exclusions(self, model: OptionalModel = None) -> ExclusionsBody:
        """The built-in and runtime exclusions in force (read-only, no token)."""
        wanted = await self._optional_model(model)
        return await self._store(
            exclusions_body, self.store, self.ignore.builtin, wanted, self.clock()
        )

    async def maintenance(self, model: OptionalModel = None) -> MaintenanceBody:
        """The maintenance windows in force (read-only, no token)."""
        wanted = await self._optional_model(model)
        return await self._store(maintenance_body, self.store, wanted, self.clock())

    async def quarantines(
        self,
        model: OptionalModel = None,
        every: Annotated[
            Flag, Query(alias="all", description="true: every quarantine, ended ones too.")
        ] = False,
    ) -> QuarantinesBody:
        """The quarantines in force, with their causes and whether the floor withholds them
        (read-only, no token)."""
        wanted = await self._optional_model(model)
        return await self._store(
            quarantines_body, self.store, wanted, self.clock(), include_ended=every
        )

    async def audit(
        self, model: OptionalModel = None, since: When | None = None, limit: Limit = 200
    ) -> AuditBody:
        """Audit records (decisions and operator actions), newest first."""
        wanted = (model or "").strip() or None
        return await self._store(audit_body, self.store, wanted, since, limit)

    # -- operations --------------------------------------------------------------------------

    async def healthz(self) -> schemas.Health:
        """Liveness: 200 whenever the process runs."""
        return schemas.Health(status="ok")

    async def readyz(self, response: Response) -> schemas.Readiness:
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
        response.status_code = 503 if reasons else 200
        return schemas.Readiness(
            ready=not reasons,
            reasons=reasons,
            last_round_at=iso(last_round),
            ignore_list_stale=self.ignore.stale,
            probing=fleet_probing(list(problems.values())),
            probing_models=sorted(m for m, p in problems.items() if p is not None),
        )

    async def metrics(self) -> Response:
        """Prometheus metrics, names prefixed canary_."""
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

    async def status_page(self) -> HTMLResponse:
        """The status page (HTML, no external assets)."""
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


class HeadAsGet:
    """HEAD answered as the GET of the same URL without its body (its headers, Content-Length and
    ETag included), as Starlette's routes answer it: FastAPI's routes take the methods they name
    only, and monitors probe with HEAD."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def bodiless(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, bodiless)


def _ping(store: Store) -> bool:
    return store.ping()  # it answers False for the store's own errors


def create_app(
    settings: Settings,
    store: Store,
    ignore_service: IgnoreListService,
    *,
    clock: Callable[[], datetime] = utc_now,
    next_round: Callable[[datetime], datetime | None] | None = None,
) -> FastAPI:
    """The ASGI app. ``store`` is a :class:`canary.store.repository.Store` (or anything alike).
    ``next_round``: when the next round starts, for the status page (default: the next slot;
    None from it: no round is scheduled, as once the demo has run its rounds)."""
    api = _Api(settings, store, ignore_service, clock, next_round)
    app = FastAPI(
        title="canary",
        version=__version__,
        description="Keeps apps off degraded OpenRouter providers: the ignore list, provider "
        "states, rounds, audit, and admin calls.",
        docs_url=None,
        redoc_url=None,
        exception_handlers=EXCEPTION_HANDLERS,
    )
    get, admin = app.get, [Depends(api.admin)]
    app.router.add_api_route(
        "/v1/ignore-list",
        IgnoreListEndpoint(ignore_service, store.document_at),
        response_model=schemas.IgnoreList | schemas.IgnoreLists | schemas.PublishedThen,
        responses={
            200: {"headers": {"ETag": {"description": ETAG, "schema": {"type": "string"}}}},
            304: {"description": "Not modified (If-None-Match matched the ETag, weakly)."},
            **errors(400, 404, 503),
        },
        name="ignore_list",
        route_class_override=IgnoreListRoute,
    )
    get("/", response_class=HTMLResponse)(api.status_page)
    get("/healthz")(api.healthz)
    get("/readyz", responses={503: {"model": schemas.Readiness, "description": "Not ready."}})(
        api.readyz
    )
    get("/metrics", response_class=PlainTextResponse)(api.metrics)
    reads = errors(400, 404, 503)
    get("/v1/providers", responses=reads)(api.providers)
    get("/v1/rounds", responses=reads)(api.rounds)
    get("/v1/history", responses=reads)(api.history)
    get("/v1/cost", responses=errors(503))(api.cost)
    get("/v1/audit", responses=errors(400, 503))(api.audit)
    get("/v1/exclusions", responses=reads)(api.exclusions)
    get("/v1/quarantines", responses=reads)(api.quarantines)
    written = (400, 401, 403, 404, 413, 422, 503)
    app.router.add_api_route(
        "/v1/quarantines/release",
        api.release,
        methods=["POST"],
        dependencies=admin,
        responses=errors(*written),
        route_class_override=CappedRoute,
    )
    get("/v1/maintenance", responses=reads)(api.maintenance)
    for path, add, remove in (
        ("/v1/exclusions", api.add_exclusion, api.remove_exclusion),
        ("/v1/maintenance", api.add_maintenance, api.remove_maintenance),
    ):
        app.router.add_api_route(
            path,
            add,
            methods=["POST"],
            status_code=201,
            dependencies=admin,
            responses=errors(*written, 409),
            route_class_override=CappedRoute,
        )
        app.delete(
            f"{path}/{{id}}", dependencies=admin, responses=errors(400, 401, 403, 404, 422, 503)
        )(remove)
    app.router.add_api_route(
        "/v1/reports",
        api.add_report,
        methods=["POST"],
        status_code=201,
        responses=errors(*written, 429),
        route_class_override=CappedRoute,
    )
    get("/v1/reports", response_model=schemas.Reports, responses=reads)(api.list_reports)
    app.add_middleware(HeadAsGet)
    app.state.api = api
    return app
