"""The equality check's rows: a check claimed once per (model, slot) like a round, its
advisory results per endpoint and their audit rows written with its end in one transaction,
and each endpoint's latest result for the operators' reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from canary.core.equality import EndpointEquality
from canary.store import tables as t
from canary.store._audit_rows import AuditRows, write_audit
from canary.store.engine import StoreBase


@dataclass(frozen=True)
class EqualityRecord:
    """One endpoint's result of one check, as the store keeps it."""

    check_id: int
    model: str
    tag: str
    at: datetime
    result: str  # pass | fail | inconclusive
    p_value: float | None
    known_p_value: float | None
    effect: float | None
    peers: int
    samples: int
    pooled: bool
    reason: str
    examples: tuple[str, ...]
    settings: dict[str, JsonValue]


class EqualityMixin(StoreBase):
    def claim_equality(
        self,
        model: str,
        scheduled_at: datetime,
        runner_id: str,
        settings: Mapping[str, JsonValue],
        *,
        at: datetime,
        lost_before: datetime,
    ) -> int | None:
        """The check of ``model`` in its slot, claimed; None when another runner holds it or it
        ended. A running check whose start is older than ``lost_before`` is taken over."""
        c = t.equality_checks.c
        with self._write() as conn:
            taken = conn.execute(
                update(t.equality_checks)
                .where(
                    c.model == model,
                    c.scheduled_at == scheduled_at,
                    c.status == "running",
                    c.started_at < lost_before,
                )
                .values(runner_id=runner_id, started_at=at, settings=dict(settings))
                .returning(c.id)
            ).scalar_one_or_none()
            if taken is not None:
                return int(taken)
        try:
            with self._write() as conn:
                values = {
                    "model": model,
                    "scheduled_at": scheduled_at,
                    "started_at": at,
                    "status": "running",
                    "runner_id": runner_id,
                    "settings": dict(settings),
                    "detail": {},
                }
                return int(
                    conn.execute(
                        insert(t.equality_checks).values(**values).returning(c.id)
                    ).scalar_one()
                )
        except IntegrityError:  # another runner claimed the slot first
            return None

    def finish_equality(
        self,
        check_id: int,
        runner_id: str,
        results: Sequence[tuple[EndpointEquality, bool]],
        *,
        at: datetime,
        status: str = "finished",
        cost_usd: float | None = None,
        detail: Mapping[str, JsonValue] | None = None,
        audit: AuditRows | None = None,
    ) -> bool:
        """End a check with its results (each with whether it was pooled) and audit rows, in
        one transaction, only while ``runner_id`` still holds it (False, nothing written)."""
        c = t.equality_checks.c
        with self._write() as conn:
            row = conn.execute(
                update(t.equality_checks)
                .where(c.id == check_id, c.runner_id == runner_id, c.status == "running")
                .values(status=status, finished_at=at, cost_usd=cost_usd, detail=dict(detail or {}))
                .returning(c.model)
            ).first()
            if row is None:
                return False
            if results:
                conn.execute(
                    insert(t.equality_results),
                    [_values(check_id, row.model, r, pooled, at) for r, pooled in results],
                )
            if audit is not None:
                write_audit(conn, audit.events, audit.actor, audit.policy_version, at)
            return True

    def equality_claimed(self, scheduled_at: datetime) -> set[str]:
        """The models whose check of the slot was claimed (running or ended)."""
        c = t.equality_checks.c
        with self._read() as conn:
            return set(
                conn.execute(select(c.model).where(c.scheduled_at == scheduled_at)).scalars()
            )

    def latest_equality(self, models: Sequence[str] | None = None) -> list[EqualityRecord]:
        """Each endpoint's latest equality result (by model, then tag)."""
        r, c = t.equality_results.c, t.equality_checks.c
        latest = select(r.model, r.tag, func.max(r.id).label("id")).group_by(r.model, r.tag)
        if models is not None:
            latest = latest.where(r.model.in_(list(models)))
        last = latest.subquery()
        stmt = (
            select(t.equality_results, c.settings)
            .join(last, and_(r.id == last.c.id))
            .join(t.equality_checks, c.id == r.check_id)
            .order_by(r.model, r.tag)
        )
        with self._read() as conn:
            return [
                EqualityRecord(
                    check_id=row.check_id,
                    model=row.model,
                    tag=row.tag,
                    at=row.at,
                    result=row.result,
                    p_value=row.p_value,
                    known_p_value=row.known_p_value,
                    effect=row.effect,
                    peers=row.peers,
                    samples=row.samples,
                    pooled=row.pooled,
                    reason=row.reason,
                    examples=tuple(str(e) for e in row.examples or ()),
                    settings=dict(row.settings or {}),
                )
                for row in conn.execute(stmt)
            ]


def _values(
    check_id: int, model: str, r: EndpointEquality, pooled: bool, at: datetime
) -> dict[str, JsonValue | datetime]:
    return {
        "check_id": check_id,
        "model": model,
        "tag": r.tag,
        "at": at,
        "result": str(r.outcome),
        "p_value": r.p_value,
        "known_p_value": r.known_p_value,
        "effect": r.effect,
        "peers": r.peers,
        "samples": r.samples,
        "pooled": pooled,
        "reason": r.reason,
        "examples": list(r.examples),
    }
