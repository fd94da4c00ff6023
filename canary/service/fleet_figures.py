"""The figures ``GET /metrics`` exports, read from the store and from the served lists.

Every replica reads the same store, so every replica exports the same endpoint states, rounds,
quarantines, latency and spend, whichever of them ran the round. :class:`StoreFigures` are read
at most every :data:`REFRESH_EVERY` (a few indexed queries per model) and the last good ones are
kept while the store is unreachable. :class:`ListFigures` describe the lists this replica serves
(its in-memory :class:`canary.service.ignore_list.IgnoreListService`), read at each scrape.

Endpoints exported: those of each watched model's latest listing, plus one quarantined while
unlisted (its quarantine is still published). Endpoints that left the listing are dropped
otherwise, so the series follow the fleet instead of its history; an entry is not an endpoint (a
provider slug excluded adds no series of its own: the endpoints it names show ``excluded``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from canary.core.budget import day_start
from canary.core.controls import Controls
from canary.core.model import Exclusion, Layer, Result
from canary.service.ignore_list import IgnoreListService, ListUnavailable
from canary.service.logs import get_logger
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store
from canary.views.latency import Latency
from canary.views.providers import ProviderView, provider_views_of

log = get_logger("canary.service.metrics")

REFRESH_EVERY = timedelta(seconds=30)
LAST_TTFT_WITHIN = timedelta(days=1)
CONCLUSIVE = frozenset({Result.passed.value, Result.fail.value})
# (window, percentile: the label and the key in the latency figures)
TTFT_PERCENTILES = tuple(
    (window, percentile) for window in ("24h", "7d") for percentile in ("p50", "p95", "p99")
)


@dataclass(frozen=True)
class EndpointFigures:
    model: str
    provider: str
    state: str  # one of canary.views.providers.STATES
    ttft_s: dict[tuple[str, str], float]  # (window, percentile) -> seconds; absent without samples
    peers_p95_24h_s: float | None  # median of the model's other endpoints' 24 h p95
    latency_degraded: bool
    # contract -> 1 (pass) or 0 (fail) in the endpoint's latest judged round; a contract that was
    # inconclusive there (or not applicable, or a transport error) is absent
    success: dict[str, int]
    last_ttft_s: float | None  # its latest time-to-first-token sample within a day


@dataclass(frozen=True)
class ModelFigures:
    model: str
    last_success_at: datetime | None  # end of the latest finished round
    last_duration_s: float | None
    last_cost_usd: float | None
    probe_weak: bool
    quarantines_started: int
    would_quarantines: int  # observe mode's would_quarantine decisions, ever
    conclusive: int  # pass or fail results in the model's latest judged round
    equality_outliers: int = 0  # endpoints whose latest equality result is a fail (advisory)


@dataclass(frozen=True)
class StoreFigures:
    read_at: datetime
    endpoints: tuple[EndpointFigures, ...]
    models: tuple[ModelFigures, ...]
    failing_deliveries: int
    spent_today_usd: float  # every model, since midnight UTC


@dataclass(frozen=True)
class ListFigures:
    """One model's list as this replica serves it."""

    model: str
    capacity_floor: int
    usable_endpoints: int | None  # None before the model's first listing
    floor_breached: bool
    withheld: int  # quarantines held back by the floor
    entries: int  # providers in the list
    quarantines: int  # enforced quarantines published in it
    age_s: float
    stale: bool
    profile: str | None = None  # a task profile's list (None: the plain list)
    requirements: int = 0  # endpoints its published requirement entries name


def read_store_figures(
    store: Store,
    models: Sequence[str],
    *,
    builtin: Sequence[Exclusion],
    now: datetime,
    degraded_p95_s: float,
    controls: Mapping[str, Controls] | None = None,
) -> StoreFigures:
    """Raises one of :data:`canary.store.engine.STORE_ERRORS` when the store cannot be read."""
    models = list(dict.fromkeys(models))
    views = provider_views_of(
        store, models, builtin=builtin, now=now, degraded_p95_s=degraded_p95_s, controls=controls
    )
    listings = store.latest_snapshots(models)
    activity = store.fleet_activity(models)
    spent = sum(store.round_spend(day_start(now)).values())
    last_ttft = {model: store.ttft_recent(model, now - LAST_TTFT_WITHIN, 1) for model in models}
    endpoints = [
        _endpoint(view, last_ttft[model].get(view.provider, ()))
        for model in models
        for view in views[model]
        if view.provider in (listings[model] or {}) or view.state == "quarantined"
    ]
    outliers: dict[str, int] = {}
    for r in store.latest_equality(models):
        outliers[r.model] = outliers.get(r.model, 0) + (r.result == "fail")
    model_figures = []
    for model in models:
        last = activity.last_finished.get(model)
        model_figures.append(
            ModelFigures(
                model=model,
                last_success_at=last.finished_at if last else None,
                last_duration_s=last.duration_s if last else None,
                last_cost_usd=last.cost_usd if last else None,
                probe_weak=model in activity.weak_probe,
                quarantines_started=activity.quarantines_started.get(model, 0),
                would_quarantines=activity.would_quarantines.get(model, 0),
                conclusive=_conclusive_in_latest_round(views[model]),
                equality_outliers=outliers.get(model, 0),
            )
        )
    return StoreFigures(
        read_at=now,
        endpoints=tuple(endpoints),
        models=tuple(model_figures),
        failing_deliveries=activity.failing_deliveries,
        spent_today_usd=spent,
    )


def _conclusive_in_latest_round(views: Sequence[ProviderView]) -> int:
    marks = [mark for view in views for mark in view.results.values()]
    if not marks:
        return 0
    latest = max(mark.round_id for mark in marks)
    return sum(1 for m in marks if m.round_id == latest and m.result in CONCLUSIVE)


def _endpoint(view: ProviderView, recent_ttft: Sequence[float]) -> EndpointFigures:
    latency = view.latency
    return EndpointFigures(
        success={
            contract: 1 if mark.result == Result.passed.value else 0
            for contract, mark in view.results.items()
            if mark.result in CONCLUSIVE
        },
        last_ttft_s=recent_ttft[-1] if recent_ttft else None,
        model=view.model,
        provider=view.provider,
        state=view.state,
        ttft_s=_percentiles(latency),
        peers_p95_24h_s=latency.peers_p95_24h_s,
        latency_degraded=latency.state == "degraded",
    )


def _percentiles(latency: Latency) -> dict[tuple[str, str], float]:
    windows = {"24h": latency.day, "7d": latency.week}
    out = {}
    for window, percentile in TTFT_PERCENTILES:
        value = windows[window].get(percentile)
        if isinstance(value, int | float):
            out[(window, percentile)] = float(value)
    return out


def list_figures(ignore: IgnoreListService) -> tuple[ListFigures, ...]:
    """The lists this replica serves, from memory (no store access)."""
    out = []
    for model in ignore.models:
        covering = [name for name, p in sorted(ignore.profiles.items()) if p.covers(model)]
        for profile in (None, *covering):
            try:
                published = ignore.published(model, profile=profile)
            except (LookupError, ListUnavailable):
                break
            p = published.publication
            out.append(
                ListFigures(
                    model=model,
                    capacity_floor=p.floor,
                    usable_endpoints=None if p.usable is None else len(p.usable),
                    floor_breached=p.breached,
                    withheld=len(p.withheld),
                    entries=len(p.ignore),
                    quarantines=sum(1 for e in p.entries if e.layer is Layer.quarantine),
                    age_s=ignore.age_s(model) or 0.0,
                    stale=published.stale,
                    profile=profile,
                    requirements=len({e.tag for e in p.entries if e.layer is Layer.requirement}),
                )
            )
    return tuple(out)


class StoreMetrics:
    """The last good :class:`StoreFigures` of the watched models, re-read when due."""

    def __init__(
        self,
        store: Store,
        models: Sequence[str],
        builtin: Sequence[Exclusion],
        degraded_p95_s: float,
        controls: Mapping[str, Controls] | None = None,
    ) -> None:
        self._store = store
        self._models = tuple(models)
        self._builtin = tuple(builtin)
        self._degraded_p95_s = degraded_p95_s
        self._controls = dict(controls or {})
        self._reading = threading.Lock()  # one read at a time; concurrent scrapes skip it
        self._tried_at: datetime | None = None
        self.figures: StoreFigures | None = None
        self.up = False  # the latest read succeeded

    def due(self, now: datetime) -> bool:
        return self._tried_at is None or now - self._tried_at >= REFRESH_EVERY

    def refresh(self, now: datetime) -> bool:
        """Read the figures again; on a store error keep the last good ones and say False."""
        if not self._reading.acquire(blocking=False):
            return False
        try:
            self._tried_at = now
            self.figures = read_store_figures(
                self._store,
                self._models,
                builtin=self._builtin,
                now=now,
                degraded_p95_s=self._degraded_p95_s,
                controls=self._controls,
            )
            self.up = True
            return True
        except STORE_ERRORS as exc:
            log.warning("store_metrics_unavailable", error=type(exc).__name__)
            self.up = False
            return False
        finally:
            self._reading.release()
