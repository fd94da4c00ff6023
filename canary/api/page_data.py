"""What the status page shows, gathered from the store and the ignore-list service (no HTML)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from canary.config.settings import Settings
from canary.core.plan import slot_of
from canary.service.ignore_list import IgnoreListService, Published
from canary.store._reports import ReportRow
from canary.store.engine import STORE_ERRORS
from canary.store.log_rows import AuditRow
from canary.store.repository import Store
from canary.views.cost import CostDay, CostView, ModelSpend, cost_view
from canary.views.equality import equality_line
from canary.views.known import known_models
from canary.views.providers import ProviderView, provider_views
from canary.views.records import QuarantineRecord, quarantine_json

TIMELINE_DAYS = 14


@dataclass(frozen=True)
class ModelSection:
    model: str
    controls: tuple[str, ...]  # positive-control hosts: expected to filter
    published: Published | None
    error: str | None = None
    providers: list[ProviderView] = field(default_factory=list)
    quarantines: list[QuarantineRecord] = field(default_factory=list)
    events: list[AuditRow] = field(default_factory=list)
    cost: ModelSpend | None = None
    equality: str = ""  # the equality check's line (canary.views.equality)
    reports: list[ReportRow] = field(default_factory=list)  # the last day's, newest first


@dataclass(frozen=True)
class PageContext:
    now: datetime
    mode: str
    interval_minutes: float
    sections: list[ModelSection]
    store_ok: bool
    last_refresh_at: datetime | None
    ttft_bound_s: float
    slow_s: float
    cost_day: CostDay | None = None
    last_round_at: datetime | None = None  # the latest finished round of any model
    next_round_at: datetime | None = None  # the next slot; None: no round is scheduled


def next_slot(settings: Settings) -> Callable[[datetime], datetime]:
    """When the daemon's next round starts: the next slot of the settings' interval."""
    interval = settings.interval_minutes
    return lambda now: slot_of(now, interval) + timedelta(minutes=interval)


def gather(
    settings: Settings,
    store: Store,
    ignore: IgnoreListService,
    now: datetime,
    *,
    next_round_at: datetime | None,
) -> PageContext:
    """What the page shows at ``now``; ``next_round_at`` None: no round is scheduled."""
    store_ok = True
    try:
        models = known_models(settings.model_ids, store)
    except STORE_ERRORS:
        store_ok, models = False, sorted({*settings.model_ids, *ignore.models})
    spend: CostView | None = None
    if store_ok:
        try:
            spend = cost_view(store, models, now, settings.daily_budget_usd)
        except STORE_ERRORS:
            spend = None
    costs = {m["model"]: m for m in spend["models"]} if spend else {}
    sections = []
    for model in models:
        try:
            published: Published | None = ignore.published(model)
        except LookupError:
            published = None
        controls = tuple(settings.model(model).positive_controls)
        if not store_ok:
            sections.append(ModelSection(model, controls, published, "the store is unreachable"))
            continue
        try:
            providers = provider_views(
                store,
                model,
                builtin=ignore.builtin,
                now=now,
                degraded_p95_s=settings.latency_degraded_p95_s,
                spark=True,
                controls=settings.model_controls,
            )
            since = now - timedelta(days=TIMELINE_DAYS)
            quarantines = [
                quarantine_json(q)
                for q in store.quarantines(model=model, active_only=False, now=now)
                if (q.until or now) >= since
            ]
            events = store.audit(model=model, since=since, limit=12)
            checked = equality_line(store.latest_equality([model]))
            reports = store.reports(model=model, since=now - timedelta(days=1), limit=12)
            shown = (providers, quarantines, events, costs.get(model))
            sections.append(
                ModelSection(model, controls, published, None, *shown, checked, reports)
            )
        except STORE_ERRORS as exc:
            store_ok = False
            failed = f"the store failed: {type(exc).__name__}"
            sections.append(ModelSection(model, controls, published, failed))
    last_round_at = None
    if store_ok:
        try:
            last_round_at = store.last_finished_round_at()
        except STORE_ERRORS:
            store_ok = False
    return PageContext(
        now=now,
        last_round_at=last_round_at,
        next_round_at=next_round_at,
        mode=settings.mode,
        interval_minutes=settings.interval_minutes,
        sections=sections,
        store_ok=store_ok,
        last_refresh_at=ignore.last_refresh_at,
        ttft_bound_s=settings.ttft_threshold_s,
        slow_s=settings.latency_degraded_p95_s,
        cost_day=spend["day"] if spend else None,
    )
