"""Endpoint state and the quarantine layer: decisions (compare-and-set + audit in one
transaction), manual release, reads. Every decision is made by canary.core; this persists it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import Connection, Update, bindparam, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from canary.core.events import Event
from canary.core.model import EndpointState, Exclusion, iso_utc
from canary.core.quarantine import QuarantineEnd, QuarantineStart, release_manually
from canary.store import tables as t
from canary.store._audit_rows import write_audit
from canary.store._decode import endpoint_state, looks_column, quarantine_exclusion, quarantine_row
from canary.store._guard import Conflict, bump_guard, lock_guard
from canary.store._rounds import finish_decided
from canary.store.engine import StoreBase
from canary.store.rows import NoActiveQuarantine, QuarantineRow, SlotAlreadyCounted


def _state_values(s: EndpointState) -> dict[str, JsonValue | datetime]:
    return {
        "failing_streak": s.failing_streak,
        "streaks": [
            {
                "contract": x.contract.value,
                "count": x.count,
                "last_fail_at": iso_utc(x.last_fail_at),
                "evidence": looks_column(x.evidence),
                "warned": x.warned,
            }
            for x in s.streaks
        ],
        "recovery_streak": s.recovery_streak,
        "recovery_evidence": looks_column(s.recovery_evidence),
        "quarantined_since": s.quarantined_since,
        "quarantined_until": s.quarantined_until,
        "causes": list(s.causes),
        "ladder_step": s.ladder_step,
        "last_quarantine_at": s.last_quarantine_at,
        "next_language": s.next_language,
        "next_language_since": s.next_language_since,
    }


class EndpointStateMixin(StoreBase):
    def load_states(self, model: str) -> dict[str, EndpointState]:
        return self.load_states_of([model])[model]

    def load_states_of(self, models: Sequence[str]) -> dict[str, dict[str, EndpointState]]:
        out: dict[str, dict[str, EndpointState]] = {m: {} for m in models}
        stmt = select(t.endpoint_state).where(t.endpoint_state.c.model.in_(list(out)))
        with self._read() as conn:
            for row in conn.execute(stmt).mappings():
                out[row["model"]][row["tag"]] = endpoint_state(row)
        return out

    def apply_decision(
        self,
        *,
        round_id: int | None,
        model: str,
        before: Mapping[str, EndpointState],
        after: Mapping[str, EndpointState],
        events: Sequence[Event],
        quarantines_started: Sequence[QuarantineStart] = (),
        releases: Sequence[QuarantineEnd] = (),
        actor: str,
        policy_version: str,
        at: datetime,
        guard: int | None = None,
        holder: str | None = None,
    ) -> bool:
        """Apply one decision in ONE transaction; False (and nothing written) on a conflict.

        ``guard``: the model's guard version the decision was made on (see
        :meth:`guard_version`); when an operator changed the model's layers since, nothing is
        written. Each state in ``after`` that differs from ``before`` is written by
        compare-and-set on the version it was read at (``before[tag].version``, else
        ``after[tag].version``; version 0 means "not stored yet" and inserts). ``holder``: the
        round's claimer, which must still hold it (:class:`RoundLost`). The round ends
        ``finished`` in this transaction (a decided round is never abandoned), and each state
        written remembers the round's slot: a decision of another round of a slot that already
        counted for the endpoint raises :class:`SlotAlreadyCounted`. Releases close the open
        quarantine row; starts insert one (closing any still-open row as ``superseded``); every
        event becomes one audit row.
        """
        try:
            with self._write() as conn:
                slot = None if round_id is None else finish_decided(conn, round_id, holder, at)
                if guard is not None and lock_guard(conn, model) != guard:
                    raise Conflict(f"{model}: its layers changed since the decision was made")
                for tag in sorted(after):
                    new = after[tag]
                    old = before.get(tag)
                    if old is not None and old == new:
                        continue
                    expected = old.version if old is not None else new.version
                    _cas_state(conn, model, tag, new, expected, at, slot)
                for end in releases:
                    _close_open_quarantine(conn, end.model, end.tag, end.at, end.why)
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
                            evidence=looks_column(start.evidence),
                            causes=list(start.causes),
                            policy_version=policy_version,
                            round_id=round_id,
                        )
                    )
                write_audit(conn, events, actor, policy_version, at, round_id)
                if quarantines_started or releases:
                    bump_guard(conn, model)
        except (Conflict, IntegrityError):
            return False
        return True

    # --- the quarantine layer -------------------------------------------------------------------

    def quarantines(
        self, model: str | None = None, active_only: bool = True, now: datetime | None = None
    ) -> list[QuarantineRow]:
        """Quarantine rows, newest first. Active: not released and (given ``now``) not over."""
        q = t.quarantines.c
        stmt = select(t.quarantines).order_by(q.started_at.desc(), q.id.desc())
        if model is not None:
            stmt = stmt.where(q.model == model)
        if active_only:
            stmt = stmt.where(q.released_at.is_(None))
            if now is not None:
                stmt = stmt.where(q.until > now)
        with self._read() as conn:
            return [quarantine_row(row) for row in conn.execute(stmt).mappings()]

    def active_quarantines(self, model: str | None, now: datetime) -> list[Exclusion]:
        return [
            quarantine_exclusion(q)
            for q in sorted(
                self.quarantines(model, active_only=True, now=now), key=lambda q: (q.model, q.tag)
            )
        ]

    def release_quarantine(
        self, model: str, tag: str, actor: str, reason: str, now: datetime
    ) -> QuarantineEnd:
        """Manual release, decided by :func:`canary.core.quarantine.release_manually`: closes the
        quarantine (why ``manual``), restarts the counts but keeps the ladder, and writes a
        ``release`` audit row, atomically. Raises :class:`NoActiveQuarantine`."""
        s = t.endpoint_state.c
        with self._write() as conn:
            lock_guard(conn, model)
            row = (
                conn.execute(select(t.endpoint_state).where(s.model == model, s.tag == tag))
                .mappings()
                .one_or_none()
            )
            open_row = _open_quarantine(conn, model, tag, now)
            state = endpoint_state(row) if row is not None else None
            if state is None or open_row is None or not state.quarantined(now):
                raise NoActiveQuarantine(model, tag)
            after, end, event = release_manually(state, now=now, reason=reason, actor=actor)
            _cas_state(conn, model, tag, after, state.version, now)
            _close_open_quarantine(conn, model, tag, now, end.why)
            evidence = open_row.evidence
            write_audit(
                conn,
                [replace(event, quarantine_id=open_row.id, evidence=evidence)],
                actor,
                open_row.policy_version,
                now,
            )
            bump_guard(conn, model)
        return end


_STATE_COLUMNS = (*_state_values(EndpointState("", "")), "version", "updated_at")


def _cas_update(with_slot: bool) -> Update:
    """The compare-and-set UPDATE, built once: a statement built per call costs SQLAlchemy more
    (its cache key is walked again each time) than running it."""
    c = t.endpoint_state.c
    stmt = update(t.endpoint_state).where(
        c.model == bindparam("key_model"),
        c.tag == bindparam("key_tag"),
        c.version == bindparam("key_version"),
    )
    columns = _STATE_COLUMNS
    if with_slot:
        stmt = stmt.where(or_(c.counted_slot.is_(None), c.counted_slot != bindparam("key_slot")))
        columns = (*columns, "counted_slot")
    return stmt.values({name: bindparam(f"new_{name}") for name in columns})


_CAS = _cas_update(with_slot=False)
_CAS_IN_SLOT = _cas_update(with_slot=True)
_INSERT = insert(t.endpoint_state)  # built once too, its columns given as parameters


def _cas_state(
    conn: Connection,
    model: str,
    tag: str,
    new: EndpointState,
    expected: int,
    at: datetime,
    slot: datetime | None = None,
) -> None:
    """Write ``new`` if the stored version is still ``expected`` (:class:`Conflict` otherwise).
    With ``slot`` (a round's decision), only if the state was not last written by a decision of
    that same slot (:class:`SlotAlreadyCounted`)."""
    values = _state_values(new)
    if slot is not None:
        values["counted_slot"] = slot
    if expected == 0:
        conn.execute(
            _INSERT, {"model": model, "tag": tag, "version": 1, "updated_at": at, **values}
        )
        return
    values.update(version=expected + 1, updated_at=at)
    params = {f"new_{name}": value for name, value in values.items()}
    params.update(key_model=model, key_tag=tag, key_version=expected)
    if slot is not None:
        params["key_slot"] = slot
    if conn.execute(_CAS if slot is None else _CAS_IN_SLOT, params).rowcount == 1:
        return
    c = t.endpoint_state.c
    stored = conn.execute(
        select(c.version).where(c.model == model, c.tag == tag)
    ).scalar_one_or_none()
    if slot is not None and stored == expected:  # the version held: the slot was counted
        raise SlotAlreadyCounted(model, tag, slot)
    raise Conflict(f"{model} {tag}: version {expected} is stale")


def _open_quarantine(conn: Connection, model: str, tag: str, now: datetime) -> QuarantineRow | None:
    c = t.quarantines.c
    row = (
        conn.execute(
            select(t.quarantines)
            .where(c.model == model, c.tag == tag, c.released_at.is_(None), c.until > now)
            .order_by(c.id.desc())
            .limit(1)
        )
        .mappings()
        .one_or_none()
    )
    return None if row is None else quarantine_row(row)


def _close_open_quarantine(conn: Connection, model: str, tag: str, at: datetime, why: str) -> int:
    c = t.quarantines.c
    return conn.execute(
        update(t.quarantines)
        .where(c.model == model, c.tag == tag, c.released_at.is_(None))
        .values(released_at=at, release_why=why)
    ).rowcount
