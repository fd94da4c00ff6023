"""Each endpoint's latency figures, recomputed from the histograms when its model's round
finishes (see ``latency_figures`` in :mod:`canary.store.tables`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert

from canary.core.stats import LATENCY_WINDOWS, Histogram, window_figures
from canary.store import plain_reads
from canary.store import tables as t
from canary.store.engine import plain


def figure_rows(
    model: str, at: datetime, day: dict[str, Histogram], week: dict[str, Histogram]
) -> list[dict[str, Any]]:
    """One row per tag and window that has samples."""
    rows = []
    for span, histograms in (("24h", day), ("7d", week)):
        for tag, histogram in sorted(histograms.items()):
            figures = window_figures(histogram)
            if figures["n"]:
                rows.append({"model": model, "tag": tag, "span": span, "at": at, **figures})
    return rows


def refresh_latency_figures(conn: Connection, model: str, at: datetime) -> None:
    """Recompute ``model``'s figures as of ``at`` (each window ends there and starts at the hour
    its length before), on ``conn``, in its transaction."""
    day, week = plain_reads.ttft_histograms_of(
        plain(conn), [model], at - LATENCY_WINDOWS["24h"], at - LATENCY_WINDOWS["7d"]
    )[model]
    conn.execute(delete(t.latency_figures).where(t.latency_figures.c.model == model))
    rows = figure_rows(model, at, day, week)
    if rows:
        conn.execute(insert(t.latency_figures), rows)
