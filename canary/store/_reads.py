"""Read models for operators (status, history, latency, spend); endpoint snapshots and drift."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select

from canary.core.model import Endpoint
from canary.core.stats import Histogram
from canary.store import plain_reads
from canary.store import tables as t
from canary.store._audit_rows import AuditRows, write_audit
from canary.store._claims import require_held
from canary.store._extra import DECIDING
from canary.store.engine import StoreBase, plain
from canary.store.log_rows import DriftChangeLike, DriftRow, HistoryRow
from canary.store.plain_reads import (
    EMPTY_LISTING,
    ResultMark,
    WindowFigures,
    contract_result_row,
)
from canary.store.rows import ContractResultRow, RoundRow


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


class ReadsMixin(StoreBase):
    def known_models(self) -> list[str]:
        """Models with an endpoint state or a round (every snapshot belongs to a round)."""
        with self._read() as conn:
            return plain_reads.known_models(plain(conn))

    def known_tags(self, model: str) -> list[str]:
        return self.known_tags_of([model])[model]

    def known_tags_of(self, models: Sequence[str]) -> dict[str, list[str]]:
        """Each model's endpoint tags that have a state or were ever listed."""
        with self._read() as conn:
            return plain_reads.known_tags_of(plain(conn), models)

    def ttft_histograms_of(
        self, models: Sequence[str], day_since: datetime, week_since: datetime
    ) -> dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]]:
        """Per model, each tag's latency histogram since ``day_since`` and since ``week_since``
        (whole hours), read on one connection."""
        with self._read() as conn:
            return plain_reads.ttft_histograms_of(plain(conn), models, day_since, week_since)

    def latency_figures_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, WindowFigures]]]:
        """Per model and tag, the latency figures by window as of the model's latest round."""
        with self._read() as conn:
            return plain_reads.latency_figures_of(plain(conn), models)

    def ttft_recent(self, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]:
        """The latest ``per_tag`` times to first token of each tag since ``since``, oldest first:
        those of finished rounds, what the histograms count (never an abandoned attempt's)."""
        with self._read() as conn:
            return plain_reads.ttft_recent(plain(conn), model, since, per_tag)

    def history(self, model: str, tag: str, limit: int = 50) -> list[HistoryRow]:
        """The endpoint's round verdicts with their contract results, newest round first."""
        v, r = t.round_verdicts.c, t.rounds.c
        verdicts_stmt = (
            select(
                t.round_verdicts,
                r.scheduled_at,
                r.status.label("round_status"),
                (~DECIDING).label("extra"),
            )
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
                round_status=row.round_status,
                extra=bool(row.extra),
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
        with self._read() as conn:
            return plain_reads.latest_results_of(plain(conn), models)

    def latest_marks_of(self, models: Sequence[str]) -> dict[str, dict[str, dict[str, ResultMark]]]:
        with self._read() as conn:
            return plain_reads.latest_marks_of(plain(conn), models)

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
        with self._read() as conn:
            return plain_reads.round_spend(plain(conn), since, model)

    def last_closed_rounds(self, model: str | None = None) -> dict[str, RoundRow]:
        """Per model, its latest round that has ended (finished or abandoned)."""
        with self._read() as conn:
            return plain_reads.last_closed_rounds(plain(conn), model)

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
            return plain_reads.latest_snapshots(plain(conn), models)

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
