"""The audit log / notification outbox, and the leader lease."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from sqlalchemy import case, delete, insert, or_, select, update

from canary.core.events import Event
from canary.store import tables as t
from canary.store._audit_rows import audit_values
from canary.store._decode import audit_row
from canary.store.engine import StoreBase, upsert
from canary.store.log_rows import AuditRow, LeaseRow

DEFAULT_CLAIM_S = 120.0


class AuditMixin(StoreBase):
    def record_audit(
        self,
        event: Event,
        actor: str,
        policy_version: str | None,
        at: datetime,
        round_id: int | None = None,
    ) -> int:
        with self._write() as conn:
            audit_id: int = conn.execute(
                insert(t.audit)
                .values(**audit_values(event, actor, policy_version, at, round_id))
                .returning(t.audit.c.id)
            ).scalar_one()
        return audit_id

    def audit(
        self,
        model: str | None = None,
        since: datetime | None = None,
        limit: int = 200,
        *,
        tag: str | None = None,
        events: Collection[str] | None = None,
    ) -> list[AuditRow]:
        """Audit rows, newest first."""
        c = t.audit.c
        stmt = select(t.audit).order_by(c.at.desc(), c.id.desc()).limit(limit)
        if model is not None:
            stmt = stmt.where(c.model == model)
        if tag is not None:
            stmt = stmt.where(c.tag == tag)
        if since is not None:
            stmt = stmt.where(c.at >= since)
        if events is not None:
            stmt = stmt.where(c.event.in_(sorted(str(e) for e in events)))
        with self._read() as conn:
            return [audit_row(row) for row in conn.execute(stmt).mappings()]

    def pending_notifications(
        self, now: datetime, limit: int, kinds: Collection[str], *, claim_s: float = DEFAULT_CLAIM_S
    ) -> list[AuditRow]:
        """Claim up to ``limit`` unsent rows of the given kinds, oldest first.

        Claiming pushes ``next_attempt_at`` to ``now + claim_s``, so another notifier does not take
        the same rows; a notifier that dies before ``mark_notified`` leaves them to be retried after
        the claim runs out (at-least-once delivery: receivers deduplicate on the audit id). On
        PostgreSQL the rows are locked with ``FOR UPDATE SKIP LOCKED`` while they are claimed; on
        SQLite the claiming transaction holds the write lock.
        """
        if not kinds or limit <= 0:
            return []
        c = t.audit.c
        stmt = (
            select(t.audit)
            .where(
                c.notified_at.is_(None),
                c.event.in_(sorted(str(k) for k in kinds)),
                or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now),
            )
            .order_by(c.id)
            .limit(limit)
        )
        if self.is_postgres:
            stmt = stmt.with_for_update(skip_locked=True)
        claim_until = now + timedelta(seconds=claim_s)
        with self._write() as conn:
            rows = conn.execute(stmt).mappings().all()
            if rows:
                conn.execute(
                    update(t.audit)
                    .where(c.id.in_([row["id"] for row in rows]))
                    .values(next_attempt_at=claim_until)
                )
        return [audit_row(r) for r in rows]

    def mark_notified(self, audit_id: int, at: datetime) -> None:
        c = t.audit.c
        with self._write() as conn:
            conn.execute(
                update(t.audit)
                .where(c.id == audit_id)
                .values(notified_at=at, notify_attempts=c.notify_attempts + 1, next_attempt_at=None)
            )

    def mark_delivered(self, audit_id: int, targets: Collection[str]) -> None:
        """Record the targets (labels) that accepted the row so far."""
        with self._write() as conn:
            conn.execute(
                update(t.audit).where(t.audit.c.id == audit_id).values(delivered_to=sorted(targets))
            )

    def mark_notify_failed(self, audit_id: int, next_attempt_at: datetime) -> None:
        c = t.audit.c
        with self._write() as conn:
            conn.execute(
                update(t.audit)
                .where(c.id == audit_id)
                .values(notify_attempts=c.notify_attempts + 1, next_attempt_at=next_attempt_at)
            )

    # --- leader lease -------------------------------------------------------------------------

    def try_acquire_lease(self, name: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Take the lease when free, expired or already ours (then it is extended). Atomic: one
        INSERT .. ON CONFLICT DO UPDATE .. WHERE, so of two racing holders exactly one wins."""
        current = t.leases.c
        with self._write() as conn:
            stmt = upsert(conn, t.leases).values(
                name=name, holder=holder, acquired_at=now, expires_at=now + timedelta(seconds=ttl_s)
            )
            taken = stmt.on_conflict_do_update(
                index_elements=["name"],
                set_={
                    "holder": stmt.excluded.holder,
                    # re-taking our own lease extends it; its acquisition time stays
                    "acquired_at": case(
                        (current.holder == stmt.excluded.holder, current.acquired_at),
                        else_=stmt.excluded.acquired_at,
                    ),
                    "expires_at": stmt.excluded.expires_at,
                },
                where=or_(current.expires_at <= now, current.holder == holder),
            )
            won = conn.execute(taken.returning(current.holder)).scalar_one_or_none()
        return won == holder

    def renew_lease(self, name: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Extend our lease; False when another holder has it (or it is gone)."""
        c = t.leases.c
        with self._write() as conn:
            result = conn.execute(
                update(t.leases)
                .where(c.name == name, c.holder == holder)
                .values(expires_at=now + timedelta(seconds=ttl_s))
            )
        return result.rowcount == 1

    def release_lease(self, name: str, holder: str) -> bool:
        c = t.leases.c
        with self._write() as conn:
            result = conn.execute(delete(t.leases).where(c.name == name, c.holder == holder))
        return result.rowcount == 1

    def lease(self, name: str) -> LeaseRow | None:
        with self._read() as conn:
            row = (
                conn.execute(select(t.leases).where(t.leases.c.name == name))
                .mappings()
                .one_or_none()
            )
        return None if row is None else LeaseRow(**row)
