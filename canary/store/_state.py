"""Endpoint state, decisions (compare-and-set + audit in one transaction), exclusion layers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from canary.core.model import EndpointState, Event, EventKind, Exclusion, Layer
from canary.store import tables as t
from canary.store.engine import StoreBase
from canary.store.rows import (
    ExclusionRow,
    NoActiveQuarantine,
    QuarantineEndLike,
    QuarantineRow,
    QuarantineStartLike,
    UnknownExclusion,
)


class _Conflict(Exception):
    """A compare-and-set lost: someone else changed the state first."""


def _state(row: Row[Any]) -> EndpointState:
    return EndpointState(
        model=row.model,
        tag=row.tag,
        failing_streak=row.failing_streak,
        passing_streak=row.passing_streak,
        quarantined_since=row.quarantined_since,
        quarantined_until=row.quarantined_until,
        ladder_step=row.ladder_step,
        last_quarantine_at=row.last_quarantine_at,
        next_language=row.next_language,
        evidence=tuple(row.evidence or ()),
        version=row.version,
    )


def _state_values(s: EndpointState) -> dict[str, Any]:
    return {
        "failing_streak": s.failing_streak,
        "passing_streak": s.passing_streak,
        "quarantined_since": s.quarantined_since,
        "quarantined_until": s.quarantined_until,
        "ladder_step": s.ladder_step,
        "last_quarantine_at": s.last_quarantine_at,
        "next_language": s.next_language,
        "evidence": list(s.evidence),
    }


def quarantine_row(row: Row[Any]) -> QuarantineRow:
    return QuarantineRow(
        id=row.id,
        model=row.model,
        tag=row.tag,
        started_at=row.started_at,
        until=row.until,
        released_at=row.released_at,
        release_why=row.release_why,
        step=row.step,
        reason=row.reason,
        evidence=tuple(row.evidence or ()),
        policy_version=row.policy_version,
        round_id=row.round_id,
    )


def _runtime_exclusion(row: Row[Any]) -> Exclusion:
    return Exclusion(
        model=row.model,
        tag=row.tag,
        layer=Layer.runtime,
        reason=row.reason,
        since=row.created_at,
        until=row.until,
        id=row.id,
    )


def audit_values(
    event: Event, actor: str, policy_version: str | None, at: datetime, round_id: int | None
) -> dict[str, Any]:
    return {
        "at": at,
        "actor": actor,
        "event": str(event.kind),
        "model": event.model,
        "tag": event.tag,
        "detail": dict(event.detail),
        "evidence": list(event.evidence),
        "policy_version": policy_version,
        "round_id": round_id,
        "notify_attempts": 0,
    }


class StateMixin(StoreBase):
    def load_states(self, model: str) -> dict[str, EndpointState]:
        return self.load_states_of([model])[model]

    def load_states_of(self, models: Sequence[str]) -> dict[str, dict[str, EndpointState]]:
        stmt = select(t.endpoint_state).where(t.endpoint_state.c.model.in_(models))
        out: dict[str, dict[str, EndpointState]] = {m: {} for m in models}
        with self._read() as conn:
            for r in conn.execute(stmt):
                out[r.model][r.tag] = _state(r)
        return out

    def apply_decision(
        self,
        *,
        round_id: int | None,
        model: str,
        before: Mapping[str, EndpointState],
        after: Mapping[str, EndpointState],
        events: Sequence[Event],
        quarantines_started: Sequence[QuarantineStartLike] = (),
        releases: Sequence[QuarantineEndLike] = (),
        actor: str,
        policy_version: str,
        at: datetime,
    ) -> bool:
        """Apply one decision in ONE transaction; False (and nothing written) on a version conflict.

        Each state in ``after`` that differs from ``before`` is written by compare-and-set on the
        version it was read at (``before[tag].version``, else ``after[tag].version``; version 0
        means "not stored yet" and inserts). Releases close the open quarantine row; starts insert
        one (closing any still-open row as ``superseded``); every event becomes one audit row.
        """
        try:
            with self._write() as conn:
                for tag in sorted(after):
                    new = after[tag]
                    old = before.get(tag)
                    if old is not None and old == new:
                        continue
                    expected = old.version if old is not None else new.version
                    self._cas_state(conn, model, tag, new, expected, at)
                for end in releases:
                    _close_open_quarantine(
                        conn, end.model, end.tag, getattr(end, "at", None) or at, end.why
                    )
                for start in quarantines_started:
                    _close_open_quarantine(conn, start.model, start.tag, start.since, "superseded")
                    conn.execute(
                        insert(t.quarantines).values(
                            model=start.model,
                            tag=start.tag,
                            started_at=start.since,
                            until=start.until,
                            step=start.step,
                            reason=start.reason,
                            evidence=list(start.evidence),
                            policy_version=policy_version,
                            round_id=round_id,
                        )
                    )
                if events:
                    conn.execute(
                        insert(t.audit),
                        [audit_values(e, actor, policy_version, at, round_id) for e in events],
                    )
        except (_Conflict, IntegrityError):
            return False
        return True

    def _cas_state(
        self,
        conn: Connection,
        model: str,
        tag: str,
        new: EndpointState,
        expected: int,
        at: datetime,
    ) -> None:
        values = _state_values(new)
        if expected == 0:
            conn.execute(
                insert(t.endpoint_state).values(
                    model=model, tag=tag, version=1, updated_at=at, **values
                )
            )
            return
        c = t.endpoint_state.c
        result = conn.execute(
            update(t.endpoint_state)
            .where(c.model == model, c.tag == tag, c.version == expected)
            .values(version=expected + 1, updated_at=at, **values)
        )
        if result.rowcount != 1:
            raise _Conflict(f"{model} {tag}: version {expected} is stale")

    # --- the quarantine layer -------------------------------------------------------------------

    def quarantines(
        self, model: str | None = None, active_only: bool = True, now: datetime | None = None
    ) -> list[QuarantineRow]:
        """Quarantine rows, newest first. Active: not released and (given ``now``) not over."""
        c = t.quarantines.c
        stmt = select(t.quarantines).order_by(c.started_at.desc(), c.id.desc())
        if model is not None:
            stmt = stmt.where(c.model == model)
        if active_only:
            stmt = stmt.where(c.released_at.is_(None))
            if now is not None:
                stmt = stmt.where(c.until > now)
        with self._read() as conn:
            return [quarantine_row(r) for r in conn.execute(stmt)]

    def active_quarantines(self, model: str | None, now: datetime) -> list[Exclusion]:
        return [
            Exclusion(
                model=q.model,
                tag=q.tag,
                layer=Layer.quarantine,
                reason=q.reason,
                since=q.started_at,
                until=q.until,
                evidence=q.evidence,
                id=q.id,
            )
            for q in sorted(
                self.quarantines(model, active_only=True, now=now), key=lambda q: (q.model, q.tag)
            )
        ]

    def release_quarantine(
        self, model: str, tag: str, actor: str, reason: str, now: datetime
    ) -> bool:
        """Manual release: closes the quarantine (why ``manual``), clears the state's quarantine
        fields and streaks but keeps the ladder, and writes a ``release`` audit row, atomically."""
        c = t.quarantines.c
        with self._write() as conn:
            open_row = conn.execute(
                select(t.quarantines)
                .where(c.model == model, c.tag == tag, c.released_at.is_(None), c.until > now)
                .order_by(c.id.desc())
                .limit(1)
                .with_for_update()
            ).one_or_none()
            if open_row is None:
                raise NoActiveQuarantine(model, tag)
            _close_open_quarantine(conn, model, tag, now, "manual")
            s = t.endpoint_state.c
            conn.execute(
                update(t.endpoint_state)
                .where(s.model == model, s.tag == tag)
                .values(
                    quarantined_since=None,
                    quarantined_until=None,
                    failing_streak=0,
                    passing_streak=0,
                    evidence=[],
                    version=s.version + 1,
                    updated_at=now,
                )
            )
            event = Event(
                kind=EventKind.release,
                model=model,
                tag=tag,
                detail={"why": "manual", "reason": reason, "quarantine_id": open_row.id},
                evidence=tuple(open_row.evidence or ()),
            )
            conn.execute(
                insert(t.audit).values(
                    **audit_values(event, actor, open_row.policy_version, now, None)
                )
            )
        return True

    # --- the runtime layer ----------------------------------------------------------------------

    def add_exclusion(
        self, model: str, tag: str, reason: str, actor: str, until: datetime | None, now: datetime
    ) -> int:
        with self._write() as conn:
            exclusion_id: int = conn.execute(
                insert(t.exclusions)
                .values(
                    model=model, tag=tag, reason=reason, actor=actor, created_at=now, until=until
                )
                .returning(t.exclusions.c.id)
            ).scalar_one()
            detail = {
                "id": exclusion_id,
                "reason": reason,
                "until": until.isoformat() if until else None,
            }
            event = Event(kind=EventKind.exclusion_added, model=model, tag=tag, detail=detail)
            conn.execute(insert(t.audit).values(**audit_values(event, actor, None, now, None)))
        return exclusion_id

    def remove_exclusion(
        self, exclusion_id: int, actor: str, reason: str, now: datetime
    ) -> Exclusion:
        c = t.exclusions.c
        with self._write() as conn:
            row = conn.execute(
                select(t.exclusions)
                .where(c.id == exclusion_id, c.removed_at.is_(None))
                .with_for_update()
            ).one_or_none()
            if row is None:
                raise UnknownExclusion(exclusion_id)
            conn.execute(
                update(t.exclusions)
                .where(c.id == exclusion_id)
                .values(removed_at=now, removed_by=actor, remove_reason=reason)
            )
            detail = {"id": exclusion_id, "reason": reason, "was": row.reason}
            event = Event(
                kind=EventKind.exclusion_removed, model=row.model, tag=row.tag, detail=detail
            )
            conn.execute(insert(t.audit).values(**audit_values(event, actor, None, now, None)))
        return _runtime_exclusion(row)

    def active_exclusions(self, model: str | None, now: datetime) -> list[Exclusion]:
        c = t.exclusions.c
        stmt = (
            select(t.exclusions)
            .where(c.removed_at.is_(None), or_(c.until.is_(None), c.until > now))
            .order_by(c.model, c.tag, c.id)
        )
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return [_runtime_exclusion(r) for r in conn.execute(stmt)]

    def exclusion_rows(
        self, model: str | None = None, active_only: bool = True, now: datetime | None = None
    ) -> list[ExclusionRow]:
        """Runtime exclusions with who added/removed them, newest first."""
        c = t.exclusions.c
        stmt = select(t.exclusions).order_by(c.created_at.desc(), c.id.desc())
        if model is not None:
            stmt = stmt.where(c.model == model)
        if active_only:
            stmt = stmt.where(c.removed_at.is_(None))
            if now is not None:
                stmt = stmt.where(or_(c.until.is_(None), c.until > now))
        with self._read() as conn:
            return [ExclusionRow(**dict(r._mapping)) for r in conn.execute(stmt)]


def _close_open_quarantine(conn: Connection, model: str, tag: str, at: datetime, why: str) -> int:
    c = t.quarantines.c
    return conn.execute(
        update(t.quarantines)
        .where(c.model == model, c.tag == tag, c.released_at.is_(None))
        .values(released_at=at, release_why=why)
    ).rowcount
