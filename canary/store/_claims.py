"""Claims on a slot's rounds, their heartbeats, and the day's probe budget as replicas share it.

Each model's round of a slot is claimed by exactly one replica: one live row per (model, slot),
kept by a partial unique index. The claimer beats ``heartbeat_at`` while its round runs; a round
whose beats stopped for the lease TTL is marked abandoned (``{"why": "claimer lost"}``) by the
next replica that claims it, and that replica's attempt is a row of its own, so nothing the dead
attempt wrote is taken for the new one's. Everything a round writes (listing snapshots, drift,
probes, verdicts, its decision and its end) is written only while its claimer still holds it
(:class:`RoundLost` otherwise). A round is finished in its decision's transaction, so a decided
round is never abandoned nor claimed again: only a running one is.

The budget: a row per UTC day holds what the replicas reserved (the estimate of each round they
claimed, less what a finished round did not use), changed by compare-and-set, so replicas
together never plan more than the day's budget; and when the day's budget alert went out, set
by compare-and-set with the alert's audit row, so one replica records it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select, update

from canary.core.events import Event
from canary.store import tables as t
from canary.store._audit_rows import write_audit
from canary.store._decode import round_row
from canary.store._round_kinds import abandoned_detail
from canary.store.engine import StoreBase, insert_ignoring_conflict
from canary.store.rows import RoundRow


class RoundLost(LookupError):
    """The round is no longer held by this claimer: another replica reclaimed it."""

    def __init__(self, round_id: int, holder: str) -> None:
        super().__init__(f"round {round_id} is no longer held by {holder}")
        self.round_id = round_id
        self.holder = holder


def holds(conn: Connection, round_id: int, holder: str) -> bool:
    """Whether ``holder`` still runs ``round_id`` (read under the writing transaction)."""
    r = t.rounds.c
    row = conn.execute(
        select(r.status, r.runner_id).where(r.id == round_id).with_for_update()
    ).one_or_none()
    return row is not None and row.status == "running" and row.runner_id == holder


def require_held(conn: Connection, round_id: int | None, holder: str | None) -> None:
    """Raise :class:`RoundLost` unless ``holder`` still runs ``round_id`` (no check without a
    holder or a round: writes of a caller that claims nothing)."""
    if holder is not None and round_id is not None and not holds(conn, round_id, holder):
        raise RoundLost(round_id, holder)


class ClaimsMixin(StoreBase):
    def claim_round(
        self,
        model: str,
        scheduled_at: datetime,
        runner_id: str,
        policy_version: str,
        checksums: Mapping[str, str],
        *,
        started_at: datetime | None = None,
        lost_before: datetime | None = None,
        extra: bool = False,
    ) -> int | None:
        """Claim the round of ``model`` at ``scheduled_at``; None when another claimer holds it
        (or it already ended). With ``lost_before``, a running attempt whose last heartbeat (or
        start) is older than that is marked abandoned first, and the slot claimed anew.
        ``extra``: an extra round (it decides nothing), marked so from its start."""
        now = started_at or datetime.now(UTC)
        r = t.rounds.c
        values = {
            "model": model,
            "scheduled_at": scheduled_at,
            "started_at": now,
            "heartbeat_at": now,
            "status": "running",
            "policy_version": policy_version,
            "runner_id": runner_id,
            "checksums": dict(checksums),
            "skipped": [],
            "detail": {"extra": True} if extra else {},
        }
        with self._write() as conn:
            if lost_before is not None:  # only a running attempt: a decided one is finished
                conn.execute(
                    update(t.rounds)
                    .where(
                        r.model == model,
                        r.scheduled_at == scheduled_at,
                        r.status == "running",
                        or_(
                            r.heartbeat_at < lost_before,
                            and_(r.heartbeat_at.is_(None), r.started_at < lost_before),
                        ),
                    )
                    .values(
                        status="abandoned", finished_at=now, detail=abandoned_detail("claimer lost")
                    )
                )
            stmt = (
                insert_ignoring_conflict(
                    conn, t.rounds, index_elements=["model", "scheduled_at"], index_where=t.LIVE
                )
                .values(**values)
                .returning(r.id)
            )
            claimed: int | None = conn.execute(stmt).scalar_one_or_none()
            return claimed

    def live_rounds(self, models: Sequence[str], scheduled_at: datetime) -> dict[str, RoundRow]:
        """The live (not abandoned) round of each of ``models`` in the slot, where there is one."""
        r = t.rounds.c
        stmt = select(t.rounds).where(
            r.model.in_(list(models)), r.scheduled_at == scheduled_at, r.status != "abandoned"
        )
        with self._read() as conn:
            return {row["model"]: round_row(row) for row in conn.execute(stmt).mappings()}

    def heartbeat_round(self, round_id: int, runner_id: str, at: datetime) -> bool:
        """A sign of life of a running round; False only when its claimer lost it (another
        replica reclaimed it, or it was abandoned). A round its claimer already finished is
        not lost: True, and nothing to beat."""
        r = t.rounds.c
        with self._write() as conn:
            beaten = conn.execute(
                update(t.rounds)
                .where(r.id == round_id, r.runner_id == runner_id, r.status == "running")
                .values(heartbeat_at=at)
            ).rowcount
            if beaten:
                return True
            status = conn.execute(
                select(r.status).where(r.id == round_id, r.runner_id == runner_id)
            ).scalar_one_or_none()
        return status == "finished"

    def request_seconds(self, models: Sequence[str]) -> dict[tuple[str, str], float]:
        """Per (model, endpoint): the mean time of its answered requests in the model's latest
        finished round, what the next round expects of each of its requests."""
        if not models:
            return {}
        r, p = t.rounds.c, t.probes.c
        latest = (
            select(func.max(r.id))
            .where(r.model.in_(list(models)), r.status == "finished")
            .group_by(r.model)
        )
        stmt = (
            select(p.model, p.tag, func.avg(p.total_s))
            .where(p.round_id.in_(latest), p.transport == "ok", p.total_s.is_not(None))
            .group_by(p.model, p.tag)
        )
        with self._read() as conn:
            return {(m, tag): float(avg) for m, tag, avg in conn.execute(stmt) if avg is not None}

    # --- the day's budget -----------------------------------------------------------------------

    def budget_reserved(self, day: str, spent: float) -> float:
        """What the replicas reserved of ``day``'s budget (the row starts at what was spent)."""
        b = t.budget_days.c
        with self._write() as conn:
            conn.execute(
                insert_ignoring_conflict(conn, t.budget_days).values(
                    day=day, reserved_usd=max(0.0, spent)
                )
            )
            reserved: float = conn.execute(select(b.reserved_usd).where(b.day == day)).scalar_one()
        return reserved

    def reserve_budget(self, day: str, expected: float, amount: float) -> bool:
        """Reserve ``amount`` more if the reservation is still ``expected`` (compare-and-set)."""
        b = t.budget_days.c
        with self._write() as conn:
            done = conn.execute(
                update(t.budget_days)
                .where(b.day == day, b.reserved_usd == expected)
                .values(reserved_usd=expected + max(0.0, amount))
            ).rowcount
        return bool(done)

    def release_budget(self, day: str, amount: float) -> None:
        """Give back what a finished round reserved and did not spend."""
        if amount <= 0:
            return
        b = t.budget_days.c
        with self._write() as conn:
            conn.execute(
                update(t.budget_days)
                .where(b.day == day)
                .values(reserved_usd=b.reserved_usd - amount)
            )

    def last_budget_alert(self) -> datetime | None:
        """When the latest budget alert went out (any day, any replica); None: never."""
        b = t.budget_days.c
        with self._read() as conn:
            last: datetime | None = conn.execute(select(func.max(b.alerted_at))).scalar_one()
        return last

    def record_budget_alert(
        self,
        day: str,
        event: Event,
        *,
        last_alert_at: datetime | None,
        actor: str,
        policy_version: str | None,
        at: datetime,
        round_id: int | None = None,
    ) -> bool:
        """Record ``day``'s budget alert and its audit row in ONE transaction, if no budget alert
        went out after ``last_alert_at`` (what :func:`canary.core.alerts.budget_alert` decided
        on): a compare-and-set on ``day``'s row, which the round reserved from, so of replicas
        deciding on the same last alert exactly one records it. False, and nothing written,
        otherwise."""
        b = t.budget_days.c
        unchanged: ColumnElement[bool] = b.alerted_at.is_(None)
        if last_alert_at is not None:
            unchanged = or_(unchanged, b.alerted_at <= last_alert_at)
        with self._write() as conn:
            done = conn.execute(
                update(t.budget_days).where(b.day == day, unchanged).values(alerted_at=at)
            ).rowcount
            if done:
                write_audit(conn, [event], actor, policy_version, at, round_id)
        return bool(done)
