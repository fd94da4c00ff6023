"""Read models for operators (status, history, latency, spend); endpoint snapshots and drift."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, delete, func, insert, select, text

from canary.core.model import Endpoint
from canary.core.stats import Histogram
from canary.store import tables as t
from canary.store._audit_rows import AuditRows, write_audit
from canary.store._claims import require_held
from canary.store._rounds import contract_result_row, round_row
from canary.store.engine import StoreBase
from canary.store.rows import ContractResultRow, DriftChangeLike, DriftRow, HistoryRow, RoundRow
from canary.store.ttft import hour_of

EMPTY_LISTING = ""  # marker tag of a snapshot row that records an empty endpoints list


def endpoint_meta(e: Endpoint) -> dict[str, Any]:
    """What a snapshot keeps of an endpoint: every published field but the raw payload."""
    return {
        "provider_name": e.provider_name,
        "pricing": {"prompt": e.pricing.prompt, "completion": e.pricing.completion},
        "supported_parameters": sorted(e.supported_parameters),
        "quantization": e.quantization,
        "context_length": e.context_length,
        "max_completion_tokens": e.max_completion_tokens,
        "status": e.status,
        "uptime_last_30m": e.uptime_last_30m,
        "latency_last_30m": e.latency_last_30m,
        "service_tier": e.service_tier,
        "model_id": e.raw.get("model_id") if isinstance(e.raw.get("model_id"), str) else None,
    }


_LATEST_AT = (
    select(func.max(t.endpoint_snapshots.c.at))
    .where(t.endpoint_snapshots.c.model == bindparam("model"))
    .scalar_subquery()
)
# no ORDER BY: it lets SQLite walk the model's (model, tag) index through every snapshot
_LATEST_SNAPSHOT = select(
    t.endpoint_snapshots.c.tag, t.endpoint_snapshots.c.meta, t.endpoint_snapshots.c.id
).where(t.endpoint_snapshots.c.model == bindparam("model"), t.endpoint_snapshots.c.at == _LATEST_AT)


def snapshot_on(conn: Connection, model: str) -> dict[str, dict[str, Any]] | None:
    """The model's latest snapshot read on ``conn``: meta by tag; None when never listed."""
    rows = sorted(conn.execute(_LATEST_SNAPSHOT, {"model": model}), key=lambda r: (r.tag, r.id))
    if not rows:
        return None
    return {tag: dict(meta) for tag, meta, _ in rows if tag != EMPTY_LISTING}


# Distinct values read by hopping along an index, one step a value, instead of reading every row
# (neither SQLite nor PostgreSQL does this on their own): the models of ``rounds``, and one
# model's tags in ``endpoint_snapshots`` and ``round_verdicts`` with each tag's latest round.
_DISTINCT_ROUND_MODELS = text(
    "WITH RECURSIVE m(model) AS ("
    " SELECT min(model) FROM rounds"
    " UNION ALL"
    " SELECT (SELECT min(r.model) FROM rounds r WHERE r.model > m.model) FROM m"
    " WHERE m.model IS NOT NULL"
    ") SELECT model FROM m WHERE model IS NOT NULL"
)
_LISTED_TAGS = text(
    "WITH RECURSIVE d(tag) AS ("
    " SELECT min(tag) FROM endpoint_snapshots WHERE model = :model"
    " UNION ALL"
    " SELECT (SELECT min(s.tag) FROM endpoint_snapshots s WHERE s.model = :model AND s.tag > d.tag)"
    " FROM d WHERE d.tag IS NOT NULL"
    ") SELECT tag FROM d WHERE tag IS NOT NULL"
)
# each tag's latest verdict of a round not abandoned: down the (model, tag, round_id) index
_LATEST_JUDGED_ROUNDS = text(
    "WITH RECURSIVE d(tag) AS ("
    " SELECT min(tag) FROM round_verdicts WHERE model = :model"
    " UNION ALL"
    " SELECT (SELECT min(v.tag) FROM round_verdicts v WHERE v.model = :model AND v.tag > d.tag)"
    " FROM d WHERE d.tag IS NOT NULL"
    ") SELECT tag, (SELECT v.round_id FROM round_verdicts v"
    " WHERE v.model = :model AND v.tag = d.tag AND NOT EXISTS (SELECT 1 FROM rounds r"
    " WHERE r.id = v.round_id AND r.status = 'abandoned')"  # ix_rounds_abandoned, not a join
    " ORDER BY v.round_id DESC LIMIT 1) FROM d WHERE tag IS NOT NULL"
)


class ReadsMixin(StoreBase):
    def known_models(self) -> list[str]:
        """Models with an endpoint state or a round (every snapshot belongs to a round)."""
        with self._read() as conn:
            states = set(conn.execute(select(t.endpoint_state.c.model).distinct()).scalars())
            return sorted(states | set(conn.execute(_DISTINCT_ROUND_MODELS).scalars()))

    def known_tags(self, model: str) -> list[str]:
        return self.known_tags_of([model])[model]

    def known_tags_of(self, models: Sequence[str]) -> dict[str, list[str]]:
        """Each model's endpoint tags that have a state or were ever listed."""
        state = t.endpoint_state.c
        out: dict[str, set[str]] = {m: set() for m in models}
        with self._read() as conn:
            for model, tag in conn.execute(
                select(state.model, state.tag).where(state.model.in_(models))
            ):
                out[model].add(tag)
            for model in out:
                out[model].update(conn.execute(_LISTED_TAGS, {"model": model}).scalars())
        return {m: sorted(tags - {EMPTY_LISTING}) for m, tags in out.items()}

    def ttft_histograms_of(
        self, models: Sequence[str], day_since: datetime, week_since: datetime
    ) -> dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]]:
        """Per model, each tag's latency histogram since ``day_since`` and since ``week_since``
        (whole hours: each bound is taken back to the start of its hour); one query per model,
        on one connection (grouping one model at a time sorts far less than all at once)."""
        c = t.ttft_buckets.c
        in_day = c.hour >= hour_of(day_since)
        stmt = (
            select(
                c.tag,
                c.bucket,
                func.sum(c.n),
                func.max(c.top),
                func.sum(case((in_day, c.n), else_=0)),
                func.max(case((in_day, c.top))),
            )
            .where(c.model == bindparam("model"), c.hour >= hour_of(week_since))
            .group_by(c.tag, c.bucket)
        )
        out: dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]] = {}
        with self._read() as conn:
            for model in dict.fromkeys(models):
                day: dict[str, Histogram] = {}
                week: dict[str, Histogram] = {}
                for tag, bucket, n, top, day_n, day_top in conn.execute(stmt, {"model": model}):
                    week.setdefault(tag, {})[bucket] = (int(n), float(top))
                    if day_n:
                        day.setdefault(tag, {})[bucket] = (int(day_n), float(day_top))
                out[model] = (day, week)
        return out

    def ttft_recent(self, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]:
        """The latest ``per_tag`` times to first token of each tag since ``since``, oldest first:
        those of finished rounds, what the histograms count (never an abandoned attempt's)."""
        c, r = t.probes.c, t.rounds.c
        newest_first = func.row_number().over(
            partition_by=c.tag, order_by=(c.at.desc(), c.id.desc())
        )
        recent = (
            select(c.tag, c.ttft_s, c.at, c.id, newest_first.label("rank"))
            .join(t.rounds, r.id == c.round_id)
            .where(
                c.model == model,
                c.at >= since,
                c.ttft_s.is_not(None),
                c.attribution_ok.is_(True),
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
        with self._read() as conn:
            for tag, seconds in conn.execute(stmt):
                out.setdefault(tag, []).append(float(seconds))
        return out

    def history(self, model: str, tag: str, limit: int = 50) -> list[HistoryRow]:
        """The endpoint's round verdicts with their contract results, newest round first."""
        v, r = t.round_verdicts.c, t.rounds.c
        verdicts_stmt = (
            select(t.round_verdicts, r.scheduled_at)
            .join(t.rounds, r.id == v.round_id)
            .where(v.model == model, v.tag == tag)
            .order_by(r.scheduled_at.desc(), v.round_id.desc())
            .limit(limit)
        )
        with self._read() as conn:
            verdicts = conn.execute(verdicts_stmt).all()
            ids = [row.round_id for row in verdicts]
            c = t.contract_results.c
            results = (
                conn.execute(
                    select(t.contract_results)
                    .where(c.model == model, c.tag == tag, c.round_id.in_(ids))
                    .order_by(c.id)
                ).all()
                if ids
                else []
            )
        by_round: dict[int, list[ContractResultRow]] = {}
        at_of = {row.round_id: row.scheduled_at for row in verdicts}
        for row in results:
            by_round.setdefault(row.round_id, []).append(
                contract_result_row(row, at_of[row.round_id])
            )
        return [
            HistoryRow(
                round_id=row.round_id,
                at=row.scheduled_at,
                model=row.model,
                tag=row.tag,
                verdict=row.verdict,
                language_anomaly_in=row.language_anomaly_in,
                results=tuple(by_round.get(row.round_id, ())),
            )
            for row in verdicts
        ]

    def latest_results(self, model: str) -> dict[str, dict[str, ContractResultRow]]:
        """For each endpoint, its contract results from the latest round that judged it."""
        return self.latest_results_of([model])[model]

    def latest_results_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, ContractResultRow]]]:
        """:meth:`latest_results` of several models: two queries in all. An abandoned attempt's
        verdicts are left out (its decision never came)."""
        r, c = t.rounds.c, t.contract_results.c
        out: dict[str, dict[str, dict[str, ContractResultRow]]] = {m: {} for m in models}
        with self._read() as conn:
            latest = {
                (model, tag): round_id
                for model in out
                for tag, round_id in conn.execute(_LATEST_JUDGED_ROUNDS, {"model": model})
            }
            if not latest:
                return out
            # by round first: the (round_id, model, tag) index finds a handful of rows
            stmt = (
                select(t.contract_results, r.scheduled_at)
                .join(t.rounds, r.id == c.round_id)
                .where(c.round_id.in_(sorted(set(latest.values()))), c.model.in_(models))
            )
            # sorted here: an ORDER BY lets SQLite prefer walking every result of the models
            for row in sorted(conn.execute(stmt), key=lambda row: row.id):
                if latest.get((row.model, row.tag)) == row.round_id:
                    out[row.model].setdefault(row.tag, {})[row.contract] = contract_result_row(
                        row, row.scheduled_at
                    )
        return out

    def spend(self, since: datetime, model: str | None = None) -> float:
        """USD spent on probes since ``since`` (as OpenRouter reported it)."""
        c = t.probes.c
        stmt = select(func.coalesce(func.sum(c.cost_usd), 0.0)).where(c.at >= since)
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return float(conn.execute(stmt).scalar_one())

    def round_spend(self, since: datetime, model: str | None = None) -> dict[str, float]:
        """USD per model of the rounds started since ``since`` (``rounds.cost_usd``: reported
        costs, estimated from prices where a probe had none). Running rounds count once closed."""
        r = t.rounds.c
        stmt = (
            select(r.model, func.coalesce(func.sum(r.cost_usd), 0.0))
            .where(r.started_at >= since, r.cost_usd.is_not(None))
            .group_by(r.model)
            .order_by(r.model)
        )
        if model is not None:
            stmt = stmt.where(r.model == model)
        with self._read() as conn:
            return {row[0]: float(row[1]) for row in conn.execute(stmt)}

    def last_closed_rounds(self, model: str | None = None) -> dict[str, RoundRow]:
        """Per model, its latest round that has ended (finished or abandoned)."""
        r = t.rounds.c
        latest = (
            select(r.model, func.max(r.scheduled_at).label("scheduled_at"))
            .where(r.finished_at.is_not(None))
            .group_by(r.model)
        )
        if model is not None:
            latest = latest.where(r.model == model)
        sub = latest.subquery()
        stmt = (
            select(t.rounds)
            .join(sub, (sub.c.model == r.model) & (sub.c.scheduled_at == r.scheduled_at))
            .order_by(r.model)
        )
        with self._read() as conn:
            return {row.model: round_row(row) for row in conn.execute(stmt)}

    # --- snapshots and drift ------------------------------------------------------------------

    def record_snapshots(
        self,
        round_id: int | None,
        model: str,
        endpoints: Sequence[Endpoint],
        at: datetime,
        *,
        holder: str | None = None,
    ) -> None:
        """One row per endpoint; with a round id, a retried write replaces the earlier one. With
        ``holder``, only while that claimer still runs the round (:class:`RoundLost`)."""
        s = t.endpoint_snapshots.c
        with self._write() as conn:
            require_held(conn, round_id, holder)
            if round_id is not None:
                conn.execute(
                    delete(t.endpoint_snapshots).where(s.round_id == round_id, s.model == model)
                )
            rows = [
                {
                    "round_id": round_id,
                    "model": model,
                    "tag": e.tag,
                    "at": at,
                    "meta": endpoint_meta(e),
                }
                for e in endpoints
            ]
            # An empty listing is remembered too, so the next round compares against it.
            rows = rows or [
                {"round_id": round_id, "model": model, "tag": EMPTY_LISTING, "at": at, "meta": {}}
            ]
            conn.execute(insert(t.endpoint_snapshots), rows)

    def latest_snapshot(self, model: str) -> dict[str, dict[str, Any]] | None:
        """The most recent snapshot of the model's endpoint list: meta by tag.

        None when the model was never listed; empty after a listing with no endpoints.
        """
        return self.latest_snapshots([model])[model]

    def latest_snapshots(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, Any]] | None]:
        """:meth:`latest_snapshot` of several models: one indexed query per model."""
        with self._read() as conn:
            return {model: snapshot_on(conn, model) for model in dict.fromkeys(models)}

    def record_drift(
        self,
        round_id: int | None,
        model: str,
        changes: Sequence[DriftChangeLike],
        at: datetime,
        *,
        holder: str | None = None,
        audit: AuditRows | None = None,
    ) -> list[int]:
        """One row per change, and ``audit``'s rows (the alerts among them), in one transaction.
        With ``holder``, only while that claimer still runs the round (:class:`RoundLost`,
        nothing written, otherwise)."""
        if not changes:
            return []
        with self._write() as conn:
            require_held(conn, round_id, holder)
            if audit is not None:
                write_audit(conn, audit.events, audit.actor, audit.policy_version, at, round_id)
            return [
                conn.execute(
                    insert(t.drift_events)
                    .values(
                        round_id=round_id,
                        model=model,
                        tag=ch.tag,
                        at=at,
                        field=ch.field,
                        old=ch.old,
                        new=ch.new,
                        alert=bool(ch.alert),
                        reason=getattr(ch, "reason", None),
                    )
                    .returning(t.drift_events.c.id)
                ).scalar_one()
                for ch in changes
            ]

    def drift(
        self, model: str | None = None, since: datetime | None = None, limit: int = 500
    ) -> list[DriftRow]:
        """Drift events, newest first."""
        d = t.drift_events.c
        stmt = select(t.drift_events).order_by(d.at.desc(), d.id.desc()).limit(limit)
        if model is not None:
            stmt = stmt.where(d.model == model)
        if since is not None:
            stmt = stmt.where(d.at >= since)
        with self._read() as conn:
            return [
                DriftRow(
                    id=r.id,
                    round_id=r.round_id,
                    model=r.model,
                    tag=r.tag,
                    at=r.at,
                    field=r.field,
                    old=r.old,
                    new=r.new,
                    alert=bool(r.alert),
                    reason=r.reason,
                )
                for r in conn.execute(stmt)
            ]
