"""Time to first token: the hourly histograms (``ttft_buckets``) a finishing round's probes are
counted into, each endpoint's latency figures recomputed from them (``latency_figures``, see
:mod:`canary.store.tables`), and the reads of both; beside them each endpoint's failed probes
over 24 h (``error_figures``), and the figures a task profile is held to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TypedDict

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    delete,
    func,
    insert,
    not_,
    or_,
    select,
)

from canary.core.identity import matches
from canary.core.model import Transport
from canary.core.profiles import Measured
from canary.core.stats import LATENCY_WINDOWS, Histogram, histogram_of, window_figures
from canary.store import tables as t
from canary.store._decode import listing_of
from canary.store._snapshots import latest_snapshots
from canary.store.engine import upsert
from canary.store.rows import WindowFigures


class BucketRow(TypedDict):
    model: str
    tag: str
    hour: datetime
    bucket: int
    n: int
    top: float


class FigureRow(TypedDict):
    model: str
    tag: str
    span: str
    at: datetime
    n: int
    p50: float | None
    p95: float | None
    p99: float | None


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def bucket_rows(samples: Iterable[tuple[str, str, datetime, float]]) -> list[BucketRow]:
    """(model, tag, at, seconds) samples -> one row per (model, tag, hour, bucket) with its count
    and largest sample; samples that are not durations are left out."""
    by_hour: dict[tuple[str, str, datetime], list[float]] = {}
    for model, tag, at, seconds in samples:
        by_hour.setdefault((model, tag, hour_of(at)), []).append(seconds)
    return [
        BucketRow(model=model, tag=tag, hour=hour, bucket=bucket, n=n, top=top)
        for (model, tag, hour), values in by_hour.items()
        for bucket, (n, top) in histogram_of(values).items()
    ]


def count_latency(conn: Connection, round_id: int, at: datetime) -> None:
    """Count a finishing round's times to first token (attributed probes only) into
    ``ttft_buckets``, and bring its model's latency figures up to ``at``, in the transaction
    that finishes it: once per round, and never for an abandoned attempt."""
    model = conn.execute(select(t.rounds.c.model).where(t.rounds.c.id == round_id)).scalar_one()
    p = t.probes.c
    outside_windows = outside_maintenance(conn, model, at)
    samples = conn.execute(
        select(p.model, p.tag, p.at, p.ttft_s).where(
            p.round_id == round_id,
            p.ttft_s.is_not(None),
            p.attribution_ok.is_(True),
            *outside_windows,
        )
    )
    buckets = bucket_rows((m, tag, when, float(s)) for m, tag, when, s in samples if s is not None)
    if buckets:
        stmt = upsert(conn, t.ttft_buckets)
        b, new = t.ttft_buckets.c, stmt.excluded
        stmt = stmt.on_conflict_do_update(  # a bucket keeps its largest sample
            index_elements=["model", "tag", "hour", "bucket"],
            set_={"n": b.n + new.n, "top": case((new.top > b.top, new.top), else_=b.top)},
        )
        conn.execute(stmt, buckets)
    refresh_latency_figures(conn, model, at)
    refresh_error_figures(conn, model, at, outside_windows)


def outside_maintenance(conn: Connection, model: str, at: datetime) -> list[ColumnElement[bool]]:
    """Conditions on ``probes`` that leave out those taken inside one of ``model``'s maintenance
    windows over the 24 h before ``at``: a window's results count in no figure."""
    m, p = t.maintenance.c, t.probes.c
    since = at - LATENCY_WINDOWS["24h"]
    windows = conn.execute(
        select(m.tag, m.created_at, m.until, m.removed_at).where(
            m.model == model,
            m.created_at <= at,
            m.until > since,
            or_(m.removed_at.is_(None), m.removed_at > since),
        )
    ).all()
    if not windows:
        return []
    listing = listing_of(latest_snapshots(conn, [model])[model]) or ()
    conditions = []
    for tag, start, until, removed in windows:
        tags = {tag} | {e.tag for e in listing if matches(tag, e)}
        end = min(until, removed) if removed is not None else until
        conditions.append(not_(and_(p.tag.in_(tags), p.at >= start, p.at < end)))
    return conditions


def figure_rows(
    model: str, at: datetime, day: dict[str, Histogram], week: dict[str, Histogram]
) -> list[FigureRow]:
    """One row per tag and window that has samples."""
    rows = []
    for span, histograms in (("24h", day), ("7d", week)):
        for tag, histogram in sorted(histograms.items()):
            figures = window_figures(histogram)
            if figures["n"]:
                rows.append(
                    FigureRow(
                        model=model,
                        tag=tag,
                        span=span,
                        at=at,
                        n=int(figures["n"] or 0),
                        p50=figures["p50"],
                        p95=figures["p95"],
                        p99=figures["p99"],
                    )
                )
    return rows


def refresh_latency_figures(conn: Connection, model: str, at: datetime) -> None:
    """Recompute ``model``'s figures as of ``at`` (each window ends there and starts at the hour
    its length before), on ``conn``, in its transaction."""
    day, week = ttft_histograms_of(
        conn, [model], at - LATENCY_WINDOWS["24h"], at - LATENCY_WINDOWS["7d"]
    )[model]
    conn.execute(delete(t.latency_figures).where(t.latency_figures.c.model == model))
    rows = figure_rows(model, at, day, week)
    if rows:
        conn.execute(insert(t.latency_figures), rows)


# What the wire said of the provider: a 429, an auth problem or our own bad request is in
# neither count; a 5xx (provider_error), a timeout and a disconnect (provider_error) failed.
_FAILED = (Transport.provider_error.value, Transport.timeout.value)
_COUNTED = (Transport.ok.value, *_FAILED)


def refresh_error_figures(
    conn: Connection, model: str, at: datetime, outside_windows: Sequence[ColumnElement[bool]]
) -> None:
    """Recompute ``model``'s error figures over the 24 h before ``at`` from its probes (those of
    rounds not abandoned, answered by the pinned provider, outside maintenance windows: the
    conditions ``outside_windows``), on ``conn``, in its transaction."""
    p, r = t.probes.c, t.rounds.c
    failed = func.sum(case((p.transport.in_(_FAILED), 1), else_=0))
    stmt = (
        select(p.tag, func.count(), failed)
        .join(t.rounds, r.id == p.round_id)
        .where(
            p.model == model,
            p.at > at - LATENCY_WINDOWS["24h"],
            p.at <= at,
            p.transport.in_(_COUNTED),
            p.attribution_ok.is_(True),
            r.status != "abandoned",
            *outside_windows,
        )
        .group_by(p.tag)
    )
    rows = [
        {"model": model, "tag": tag, "at": at, "probes": int(n), "errors": int(errors or 0)}
        for tag, n, errors in conn.execute(stmt)
    ]
    conn.execute(delete(t.error_figures).where(t.error_figures.c.model == model))
    if rows:
        conn.execute(insert(t.error_figures), rows)


def measured_of(conn: Connection, models: Sequence[str]) -> dict[str, dict[str, Measured]]:
    """Per model and tag, the 24 h figures a task profile is held to, as of the model's latest
    finished round: two statements for all models, a row or two per endpoint."""
    f, e = t.latency_figures.c, t.error_figures.c
    p95: dict[tuple[str, str], tuple[float | None, int]] = {
        (model, tag): (p, n)
        for model, tag, p, n in conn.execute(
            select(f.model, f.tag, f.p95, f.n).where(f.model.in_(models), f.span == "24h")
        )
    }
    errors = {
        (model, tag): (n, bad)
        for model, tag, n, bad in conn.execute(
            select(e.model, e.tag, e.probes, e.errors).where(e.model.in_(models))
        )
    }
    out: dict[str, dict[str, Measured]] = {m: {} for m in models}
    for model, tag in {*p95, *errors}:
        (p, n), (probes, bad) = p95.get((model, tag), (None, 0)), errors.get((model, tag), (0, 0))
        out[model][tag] = Measured(p, n, bad, probes)
    return out


def ttft_histograms_of(
    conn: Connection, models: Sequence[str], day_since: datetime, week_since: datetime
) -> dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]]:
    """Per model, each tag's latency histogram since ``day_since`` and since ``week_since``
    (whole hours: each bound is taken back to the start of its hour); one query per model
    (grouping one model at a time sorts far less than all at once)."""
    b = t.ttft_buckets.c
    in_day = b.hour >= hour_of(day_since)
    stmt = (
        select(
            b.tag,
            b.bucket,
            func.sum(b.n),
            func.max(b.top),
            func.sum(case((in_day, b.n), else_=0)),
            func.max(case((in_day, b.top))),
        )
        .where(b.hour >= hour_of(week_since))
        .group_by(b.tag, b.bucket)
    )
    out: dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]] = {}
    for model in dict.fromkeys(models):
        day: dict[str, Histogram] = {}
        week: dict[str, Histogram] = {}
        for tag, bucket, n, top, day_n, day_top in conn.execute(stmt.where(b.model == model)):
            week.setdefault(tag, {})[bucket] = (int(n), float(top))
            if day_n:
                day.setdefault(tag, {})[bucket] = (int(day_n), float(day_top))
        out[model] = (day, week)
    return out


def latency_figures_of(
    conn: Connection, models: Sequence[str]
) -> dict[str, dict[str, dict[str, WindowFigures]]]:
    """Per model and tag, the latency figures by window name (``24h``, ``7d``) as of the model's
    latest finished round; one query for all models."""
    out: dict[str, dict[str, dict[str, WindowFigures]]] = {m: {} for m in models}
    f = t.latency_figures.c
    stmt = select(f.model, f.tag, f.span, f.at, f.n, f.p50, f.p95, f.p99)
    for model, tag, span, *figures in conn.execute(stmt.where(f.model.in_(list(out)))):
        out[model].setdefault(tag, {})[span] = WindowFigures(*figures)
    return out


def ttft_recent(
    conn: Connection, model: str, since: datetime, per_tag: int
) -> dict[str, list[float]]:
    """The latest ``per_tag`` times to first token of each tag since ``since``, oldest first:
    those of finished rounds, what the histograms count (never an abandoned attempt's)."""
    p, r = t.probes.c, t.rounds.c
    rank = func.row_number().over(partition_by=p.tag, order_by=(p.at.desc(), p.id.desc()))
    recent = (
        select(p.tag, p.ttft_s, p.at, p.id, rank.label("rank"))
        .join(t.rounds, r.id == p.round_id)
        .where(
            p.model == model,
            p.at >= since,
            p.ttft_s.is_not(None),
            p.attribution_ok.is_(True),
            r.status == "finished",
        )
        .subquery()
    )
    stmt = (
        select(recent.c.tag, recent.c.ttft_s)
        .where(recent.c.rank <= per_tag)
        .order_by(recent.c.tag, recent.c.at, recent.c.id)
    )
    out: dict[str, list[float]] = {}
    for tag, seconds in conn.execute(stmt):
        out.setdefault(tag, []).append(float(seconds))
    return out
