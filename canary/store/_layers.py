"""The runtime layer (operators' exclusions, weighed against the floor), listings, and what the
store remembers of each model's floor (withheld quarantines, floor episodes).

The floor rules are canary.core.floor's; an operator's exclusion is checked and inserted under
the model's guard row (see :mod:`canary.store._guard`), so no round's decision interleaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, or_, select, update

from canary.core.floor import (
    ExclusionCheck,
    FloorChanges,
    FloorRecord,
    Publication,
    check_exclusion,
    publish,
    reconcile,
)
from canary.core.identity import Listed
from canary.core.model import Event, EventKind, Exclusion, Layer
from canary.store import tables as t
from canary.store._guard import bump_guard, guard_version, lock_guard
from canary.store._reads import snapshot_on
from canary.store._state import quarantine_row, write_audit
from canary.store.engine import StoreBase, insert_ignoring_conflict
from canary.store.rows import ExclusionRow, FloorRefused, UnknownExclusion


def runtime_exclusion(row: Row[Any]) -> Exclusion:
    return Exclusion(
        model=row.model,
        tag=row.tag,
        layer=Layer.runtime,
        reason=row.reason,
        since=row.created_at,
        until=row.until,
        id=row.id,
    )


def listing_of(snapshot: dict[str, dict[str, Any]] | None) -> tuple[Listed, ...] | None:
    if snapshot is None:
        return None
    return tuple(Listed(tag, meta.get("service_tier")) for tag, meta in sorted(snapshot.items()))


@dataclass(frozen=True)
class ModelLayers:
    """What a model's publication is computed from, read at one moment."""

    listing: tuple[Listed, ...] | None
    runtime: tuple[Exclusion, ...]
    quarantines: tuple[Exclusion, ...]
    record: FloorRecord

    def publish(
        self, model: str, builtin: Sequence[Exclusion], floor: int, now: datetime
    ) -> Publication:
        return publish(
            model, self.listing, builtin, self.runtime, self.quarantines, floor=floor, now=now
        )


@dataclass(frozen=True)
class ExclusionAdded:
    id: int
    check: ExclusionCheck


class LayersMixin(StoreBase):
    # --- reads ----------------------------------------------------------------------------------

    def guard_version(self, model: str) -> int:
        with self._read() as conn:
            return guard_version(conn, model)

    def model_layers(self, models: Sequence[str], now: datetime) -> dict[str, ModelLayers]:
        """Listing, runtime entries, active quarantines and the floor record of each model."""
        with self._read() as conn:
            return {m: _layers_on(conn, m, now) for m in dict.fromkeys(models)}

    def latest_listing(self, model: str) -> tuple[Listed, ...] | None:
        with self._read() as conn:
            return listing_of(snapshot_on(conn, model))

    def active_exclusions(self, model: str | None, now: datetime) -> list[Exclusion]:
        with self._read() as conn:
            return _active_runtime(conn, model, now)

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

    def floor_episodes(self, model: str | None = None) -> list[dict[str, Any]]:
        c = t.floor_episodes.c
        stmt = select(t.floor_episodes).order_by(c.opened_at, c.id)
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return [dict(r._mapping) for r in conn.execute(stmt)]

    # --- writes ---------------------------------------------------------------------------------

    def add_exclusion(
        self,
        model: str,
        tag: str,
        reason: str,
        actor: str,
        until: datetime | None,
        now: datetime,
        *,
        builtin: Sequence[Exclusion],
        floor: int,
        force: bool = False,
        policy_version: str | None = None,
    ) -> ExclusionAdded:
        """Add a runtime exclusion, checked against the floor under the model's guard.

        Raises :class:`FloorRefused` when it would lower usable below ``floor`` and ``force`` is
        not set (nothing is written). A forced one that breaches the floor opens the episode with
        ``actor`` as its author, in the same transaction.
        """
        entry = Exclusion(model, tag, Layer.runtime, reason, since=now, until=until)
        with self._write() as conn:
            lock_guard(conn, model)
            layers = _layers_on(conn, model, now)
            check = check_exclusion(
                layers.publish(model, builtin, floor, now), entry, force=force, now=now
            )
            if not check.allowed:
                raise FloorRefused(model, tag, check.message)
            new_id: int = conn.execute(
                insert(t.exclusions)
                .values(
                    model=model, tag=tag, reason=reason, actor=actor, created_at=now, until=until
                )
                .returning(t.exclusions.c.id)
            ).scalar_one()
            detail = {
                "id": new_id,
                "reason": reason,
                "until": until.isoformat() if until else None,
                "force": force,
                "usable_before": check.usable_before,
                "usable_after": check.usable_after,
            }
            event = Event(kind=EventKind.exclusion_added, model=model, tag=tag, detail=detail)
            write_audit(conn, [event], actor, policy_version, now)
            after = ModelLayers(
                layers.listing,
                (
                    *layers.runtime,
                    Exclusion(model, tag, Layer.runtime, reason, now, until, id=new_id),
                ),
                layers.quarantines,
                layers.record,
            ).publish(model, builtin, floor, now)
            _apply_floor(conn, model, reconcile(after, layers.record), now, actor, policy_version)
            bump_guard(conn, model)
        return ExclusionAdded(new_id, check)

    def remove_exclusion(
        self, exclusion_id: int, actor: str, reason: str, now: datetime
    ) -> Exclusion:
        """Removals are always allowed: they only give capacity back."""
        c = t.exclusions.c
        with self._write() as conn:
            row = conn.execute(
                select(t.exclusions)
                .where(c.id == exclusion_id, c.removed_at.is_(None))
                .with_for_update()
            ).one_or_none()
            if row is None:
                raise UnknownExclusion(exclusion_id)
            lock_guard(conn, row.model)
            conn.execute(
                update(t.exclusions)
                .where(c.id == exclusion_id)
                .values(removed_at=now, removed_by=actor, remove_reason=reason)
            )
            detail = {"id": exclusion_id, "reason": reason, "was": row.reason}
            event = Event(
                kind=EventKind.exclusion_removed, model=row.model, tag=row.tag, detail=detail
            )
            write_audit(conn, [event], actor, None, now)
            bump_guard(conn, row.model)
        return runtime_exclusion(row)

    def apply_floor_changes(
        self,
        model: str,
        changes: FloorChanges,
        now: datetime,
        actor: str,
        policy_version: str | None,
    ) -> list[Event]:
        """Record withheld/republished quarantines and floor episodes; each audit row is written
        only if its change applied, so replicas that see the same change record it once.
        Returns the events whose rows were written."""
        if changes.empty:
            return []
        with self._write() as conn:
            return _apply_floor(conn, model, changes, now, actor, policy_version)


def _active_runtime(conn: Connection, model: str | None, now: datetime) -> list[Exclusion]:
    c = t.exclusions.c
    stmt = (
        select(t.exclusions)
        .where(c.removed_at.is_(None), or_(c.until.is_(None), c.until > now))
        .order_by(c.model, c.tag, c.id)
    )
    if model is not None:
        stmt = stmt.where(c.model == model)
    return [runtime_exclusion(r) for r in conn.execute(stmt)]


def _layers_on(conn: Connection, model: str, now: datetime) -> ModelLayers:
    q = t.quarantines.c
    rows = [
        quarantine_row(r)
        for r in conn.execute(
            select(t.quarantines)
            .where(q.model == model, q.released_at.is_(None), q.until > now)
            .order_by(q.tag, q.id)
        )
    ]
    quarantines = tuple(
        Exclusion(
            model=r.model,
            tag=r.tag,
            layer=Layer.quarantine,
            reason=r.reason,
            since=r.started_at,
            until=r.until,
            evidence=r.evidence,
            id=r.id,
            causes=r.causes,
        )
        for r in rows
    )
    e = t.floor_episodes.c
    episode_open = (
        conn.execute(select(e.id).where(e.open_model == model)).scalar_one_or_none() is not None
    )
    record = FloorRecord({r.id: r.tag for r in rows if r.withheld_at is not None}, episode_open)
    return ModelLayers(
        listing_of(snapshot_on(conn, model)),
        tuple(_active_runtime(conn, model, now)),
        quarantines,
        record,
    )


def _apply_floor(
    conn: Connection,
    model: str,
    changes: FloorChanges,
    now: datetime,
    actor: str,
    policy_version: str | None,
) -> list[Event]:
    q = t.quarantines.c
    written: list[Event] = []
    for quarantine_id, event in changes.withhold:
        done = conn.execute(
            update(t.quarantines)
            .where(q.id == quarantine_id, q.withheld_at.is_(None))
            .values(withheld_at=now)
        ).rowcount
        if done:
            written.append(event)
    for quarantine_id, event in changes.republish:
        done = conn.execute(
            update(t.quarantines)
            .where(q.id == quarantine_id, q.withheld_at.is_not(None))
            .values(withheld_at=None)
        ).rowcount
        if done:
            written.append(event)
    e = t.floor_episodes.c
    if changes.open_episode is not None:
        opened = conn.execute(
            insert_ignoring_conflict(conn, t.floor_episodes)
            .values(
                model=model,
                open_model=model,
                opened_at=now,
                opened_by=actor,
                detail=dict(changes.open_episode.detail),
            )
            .returning(e.id)
        ).scalar_one_or_none()
        if opened is not None:
            written.append(changes.open_episode)
    if changes.close_episode is not None:
        closed = conn.execute(
            update(t.floor_episodes)
            .where(e.open_model == model)
            .values(open_model=None, closed_at=now)
        ).rowcount
        if closed:
            written.append(changes.close_episode)
    write_audit(conn, written, actor, policy_version, now)
    return written
