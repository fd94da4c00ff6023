"""Tail latency per endpoint, as operators see it: our own time to first token over the last 24 h
and 7 days, beside the model's other endpoints and OpenRouter's advertised figures.

The state (``healthy`` | ``degraded`` | ``unknown``) is :func:`canary.core.drift.ttft_health` of
the last 24 h against ``latency_degraded_p95_s``. It is information only: it never quarantines,
and it is kept apart from the routing state (healthy, suspect, quarantined, excluded).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from canary.core.drift import ttft_health
from canary.core.stats import Histogram

if TYPE_CHECKING:
    from canary.store.plain_reads import StoreReads

LATENCY_STATES = ("degraded", "healthy", "unknown")
SPARK_POINTS = 40
WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}


@dataclass(frozen=True)
class Latency:
    """One endpoint's latency figures (seconds, except OpenRouter's, which are milliseconds)."""

    state: str  # healthy | degraded | unknown
    bound_p95_s: float
    day: dict[str, Any]  # {p50, p95, p99, n} over the last 24 h
    week: dict[str, Any]  # the same over the last 7 days
    peers_p95_24h_s: float | None  # median of the model's other endpoints' 24 h p95
    peers_n: int  # how many other endpoints had samples
    openrouter_ms: dict[str, float] | None  # latency_last_30m of the latest snapshot
    spark: tuple[float, ...]  # recent samples, oldest first

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "p95_bound_s": self.bound_p95_s,
            "peers_p95_24h_s": self.peers_p95_24h_s,
            "peers": self.peers_n,
            "openrouter_last_30m_ms": self.openrouter_ms,
        }


def _rounded(figures: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in figures.items()}


def latencies(
    day: Mapping[str, Histogram],
    week: Mapping[str, Histogram],
    advertised: Mapping[str, Mapping[str, Any]],
    tags: Iterable[str],
    bound_p95_s: float,
    recent: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Latency]:
    """Pure: each tag's :class:`Latency` from its latency histogram per window, the latest
    snapshot's metadata by tag (``advertised``) and its latest samples, oldest first (``recent``:
    the sparkline)."""
    tags = sorted({*tags, *day, *week})
    recent = recent or {}
    health = {tag: ttft_health(day.get(tag, {}), bound_p95_s) for tag in tags}
    p95s = {tag: figures["p95"] for tag, (_, figures) in health.items()}
    out = {}
    for tag in tags:
        state, figures = health[tag]
        peers = [float(v) for other, v in p95s.items() if other != tag and v is not None]
        _, week_figures = ttft_health(week.get(tag, {}), bound_p95_s)
        meta = advertised.get(tag) or {}
        openrouter = meta.get("latency_last_30m")
        out[tag] = Latency(
            state=state,
            bound_p95_s=bound_p95_s,
            day=_rounded(figures),
            week=_rounded(week_figures),
            peers_p95_24h_s=round(statistics.median(peers), 3) if peers else None,
            peers_n=len(peers),
            openrouter_ms=dict(openrouter) if isinstance(openrouter, Mapping) else None,
            spark=tuple(recent.get(tag, ())[-SPARK_POINTS:]),
        )
    return out


def fleet_latencies(
    store: StoreReads,
    models: Sequence[str],
    now: datetime,
    bound_p95_s: float,
    tags_of: Mapping[str, Iterable[str]],
    *,
    spark: bool = False,
) -> dict[str, dict[str, Latency]]:
    """Each model's :class:`Latency` by tag (its known ``tags_of`` and those of its latest
    listing): both windows' histograms and the latest snapshots read once for all models; for
    ``spark``, each tag's latest samples of the last 24 h (only the status page draws them)."""
    histograms = store.ttft_histograms_of(models, now - WINDOWS["24h"], now - WINDOWS["7d"])
    snapshots = store.latest_snapshots(models)
    out = {}
    for model in models:
        day, week = histograms[model]
        advertised = snapshots[model] or {}
        recent = store.ttft_recent(model, now - WINDOWS["24h"], SPARK_POINTS) if spark else None
        tags = (*tags_of.get(model, ()), *advertised)
        out[model] = latencies(day, week, advertised, tags, bound_p95_s, recent)
    return out
