"""Tail latency per endpoint, as operators see it: our own time to first token over the last 24 h
and 7 days, beside the model's other endpoints and OpenRouter's advertised figures.

The figures are the store's as of each model's latest finished round (no sample arrives between
rounds); a window that ended longer ago than its length holds no sample now. The state
(``healthy`` | ``degraded`` | ``unknown``) is :func:`canary.core.drift.ttft_state` of the last
24 h against ``latency_degraded_p95_s``. It is information only: it never quarantines, and it is
kept apart from the routing state (healthy, suspect, quarantined, excluded).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import Field, JsonValue
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.drift import ttft_state
from canary.core.stats import LATENCY_WINDOWS
from canary.store.repository import Store
from canary.store.rows import Snapshot, WindowFigures
from canary.views.records import answer

LATENCY_STATES = ("degraded", "healthy", "unknown")
SPARK_POINTS = 40
NO_SAMPLE: dict[str, float | int | None] = {"p50": None, "p95": None, "p99": None, "n": 0}

Figures = Mapping[str, float | int | None]  # {p50, p95, p99, n} of one window


@answer
class LatencyRecord(TypedDict):
    """Information only: a degraded latency never quarantines."""

    state: Annotated[
        str, Field(description="degraded: our 24 h ttft p95 > p95_bound_s; unknown: no sample.")
    ]
    p95_bound_s: float
    peers_p95_24h_s: Annotated[
        float | None, Field(description="Median of the other endpoints' 24 h ttft p95, seconds.")
    ]
    peers: Annotated[int, Field(description="Other endpoints with samples.")]
    openrouter_last_30m_ms: Annotated[
        dict[str, float] | None,
        Field(description="OpenRouter's advertised ttft {p50, p75, p90, p99} in ms."),
    ]


@dataclass(frozen=True)
class Latency:
    """One endpoint's latency figures (seconds, except OpenRouter's, which are milliseconds)."""

    state: str  # healthy | degraded | unknown
    bound_p95_s: float
    day: dict[str, float | int | None]  # {p50, p95, p99, n} over the last 24 h
    week: dict[str, float | int | None]  # the same over the last 7 days
    peers_p95_24h_s: float | None  # median of the model's other endpoints' 24 h p95
    peers_n: int  # how many other endpoints had samples
    openrouter_ms: dict[str, float] | None  # latency_last_30m of the latest snapshot
    spark: tuple[float, ...]  # recent samples, oldest first

    def as_json(self) -> LatencyRecord:
        return {
            "state": self.state,
            "p95_bound_s": self.bound_p95_s,
            "peers_p95_24h_s": self.peers_p95_24h_s,
            "peers": self.peers_n,
            "openrouter_last_30m_ms": self.openrouter_ms,
        }


def _rounded(figures: Figures) -> dict[str, float | int | None]:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in figures.items()}


def latencies(
    day: Mapping[str, Figures],
    week: Mapping[str, Figures],
    advertised: Mapping[str, Mapping[str, JsonValue]],
    tags: Iterable[str],
    bound_p95_s: float,
    recent: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Latency]:
    """Pure: each tag's :class:`Latency` from its figures per window (``{p50, p95, p99, n}``;
    a tag without any has no sample), the latest snapshot's metadata by tag (``advertised``) and
    its latest samples, oldest first (``recent``: the sparkline)."""
    tags = sorted({*tags, *day, *week})
    recent = recent or {}
    day_of = {tag: day.get(tag) or NO_SAMPLE for tag in tags}
    p95s = [float(f["p95"]) for f in day_of.values() if f["p95"] is not None]
    out = {}
    for tag in tags:
        figures = day_of[tag]
        own = figures["p95"]
        peers = p95s
        if own is not None:  # every other endpoint's p95: all of them but this one's
            peers = p95s.copy()
            peers.remove(float(own))
        meta = advertised.get(tag) or {}
        openrouter = meta.get("latency_last_30m")
        out[tag] = Latency(
            state=ttft_state(figures, bound_p95_s),
            bound_p95_s=bound_p95_s,
            day=_rounded(figures),
            week=_rounded(dict(week.get(tag) or NO_SAMPLE)),
            peers_p95_24h_s=round(statistics.median(peers), 3) if peers else None,
            peers_n=len(peers),
            openrouter_ms=_figures_ms(openrouter),
            spark=tuple(recent.get(tag, ())[-SPARK_POINTS:]),
        )
    return out


def _figures_ms(value: JsonValue) -> dict[str, float] | None:
    """OpenRouter's own latency figures of a snapshot, in ms (None when it has none)."""
    if not isinstance(value, dict):
        return None
    return {k: float(v) for k, v in value.items() if isinstance(v, int | float)}


def current(figures: WindowFigures | None, span: str, now: datetime) -> Figures | None:
    """A window's stored figures as they stand at ``now``: none once the window (which ended with
    the model's latest round) lies wholly in the past."""
    if figures is None or now - figures.at >= LATENCY_WINDOWS[span]:
        return None
    return figures.as_dict()


def fleet_latencies(
    store: Store,
    models: Sequence[str],
    now: datetime,
    bound_p95_s: float,
    tags_of: Mapping[str, Iterable[str]],
    snapshots: Mapping[str, Snapshot | None],
    *,
    spark: bool = False,
) -> dict[str, dict[str, Latency]]:
    """Each model's :class:`Latency` by tag (its known ``tags_of`` and those of its latest
    listing, in ``snapshots``): the figures read once for all models; for ``spark``, each tag's
    latest samples of the last 24 h (only the status page draws them)."""
    figures_of = store.latency_figures_of(models)
    out = {}
    for model in models:
        stored = figures_of[model]
        day = {t: f for t, w in stored.items() if (f := current(w.get("24h"), "24h", now))}
        week = {t: f for t, w in stored.items() if (f := current(w.get("7d"), "7d", now))}
        advertised = snapshots[model] or {}
        since = now - LATENCY_WINDOWS["24h"]
        recent = store.ttft_recent(model, since, SPARK_POINTS) if spark else None
        tags = (*tags_of.get(model, ()), *advertised)
        out[model] = latencies(day, week, advertised, tags, bound_p95_s, recent)
    return out
