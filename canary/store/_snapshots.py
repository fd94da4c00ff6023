"""Endpoint listings as each round saw them (``endpoint_snapshots``), and what drifted between
two of them (``drift_events``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import Connection, delete, func, insert, select

from canary.core.model import Endpoint
from canary.store import tables as t
from canary.store._audit_rows import AuditRows, write_audit
from canary.store._claims import require_held
from canary.store._index_walks import each
from canary.store.engine import StoreBase
from canary.store.log_rows import DriftChangeLike, DriftRow
from canary.store.rows import Snapshot

EMPTY_LISTING = ""  # marker tag of a snapshot row that records an empty endpoints list


def endpoint_meta(e: Endpoint) -> dict[str, JsonValue]:
    """What a snapshot keeps of an endpoint: every published field but the raw payload."""
    model_id = e.raw.get("model_id")
    return {
        "provider_name": e.provider_name,
        "pricing": {"prompt": e.pricing.prompt, "completion": e.pricing.completion},
        "supported_parameters": list(sorted(e.supported_parameters)),
        "quantization": e.quantization,
        "context_length": e.context_length,
        "max_completion_tokens": e.max_completion_tokens,
        "status": e.status,
        "uptime_last_30m": e.uptime_last_30m,
        "latency_last_30m": None if e.latency_last_30m is None else dict(e.latency_last_30m),
        "service_tier": e.service_tier,
        "model_id": model_id if isinstance(model_id, str) else None,
    }


def latest_snapshots(conn: Connection, models: Sequence[str]) -> dict[str, Snapshot | None]:
    """Each model's latest snapshot, meta by tag (None when never listed); one statement, each
    model's latest time read down its (model, at) index."""
    out: dict[str, Snapshot | None] = dict.fromkeys(models)
    if not out:
        return {}
    s, listed, x = t.endpoint_snapshots.c, each(conn, list(out)), t.endpoint_snapshots.alias()
    newest = select(func.max(x.c.at)).where(x.c.model == listed.c.value).scalar_subquery()
    latest = select(listed.c.value.label("model"), newest.label("at")).subquery()
    stmt = select(s.model, s.tag, s.meta, s.id).join(
        latest, (s.model == latest.c.model) & (s.at == latest.c.at)
    )
    for model, tag, meta, _ in sorted(conn.execute(stmt), key=lambda row: (row[0], row[1], row[3])):
        snapshot = out[model]
        if snapshot is None:
            snapshot = out[model] = {}
        if tag != EMPTY_LISTING:
            snapshot[tag] = dict(meta)
    return out


class SnapshotsMixin(StoreBase):
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
        rows = [
            {"round_id": round_id, "model": model, "tag": e.tag, "at": at, "meta": endpoint_meta(e)}
            for e in endpoints
        ]
        # An empty listing is remembered too, so the next round compares against it.
        rows = rows or [
            {"round_id": round_id, "model": model, "tag": EMPTY_LISTING, "at": at, "meta": {}}
        ]
        with self._write() as conn:
            require_held(conn, round_id, holder)
            if round_id is not None:
                conn.execute(
                    delete(t.endpoint_snapshots).where(s.round_id == round_id, s.model == model)
                )
            conn.execute(insert(t.endpoint_snapshots), rows)

    def latest_snapshot(self, model: str) -> Snapshot | None:
        """The most recent snapshot of the model's endpoint list: meta by tag.

        None when the model was never listed; empty after a listing with no endpoints.
        """
        return self.latest_snapshots([model])[model]

    def latest_snapshots(self, models: Sequence[str]) -> dict[str, Snapshot | None]:
        """:meth:`latest_snapshot` of several models, in one statement."""
        with self._read() as conn:
            return latest_snapshots(conn, models)

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
                        reason=ch.reason,
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
            return [DriftRow(**row) for row in conn.execute(stmt).mappings()]
