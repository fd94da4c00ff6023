"""The runtime layer (operators' exclusions, weighed against the floor), listings, and what the
store remembers of each model's floor (withheld quarantines, floor episodes).

The floor rules are canary.core.floor's; an operator's exclusion is checked and inserted under
the model's guard row (see :mod:`canary.store._guard`), so no round's decision interleaves, and
:meth:`LayersMixin.sync_floor` reads, reconciles and records a model's floor under it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, insert, or_, select, update

from canary.core.floor import (
    ExclusionCheck,
    FloorChanges,
    FloorRecord,
    Publication,
    admit_exclusion,
    check_exclusion,
    exclusion_removed,
    publish,
    reconcile,
)
from canary.core.identity import Listed
from canary.core.model import Event, Exclusion, Layer
from canary.store import tables as t
from canary.store._audit_rows import write_audit
from canary.store._guard import bump_guard, guard_version, lock_guard
from canary.store._reads import snapshot_on
from canary.store._state import quarantine_row
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


@dataclass(frozen=True)
class FloorEpisodeRow:
    """One floor episode: opened when usable fell below the floor, closed when it was met again.
    ``detail`` is its ``floor_breached`` row's (a forced exclusion's ``action`` and
    ``policy_version`` among it)."""

    id: int
    model: str
    opened_at: datetime
    opened_by: str
    closed_at: datetime | None
    detail: dict[str, Any]

    @property
    def open(self) -> bool:
        return self.closed_at is None

    @property
    def policy_version(self) -> str | None:
        value = self.detail.get("policy_version")
        return None if value is None else str(value)


def floor_episode_row(row: Row[Any]) -> FloorEpisodeRow:
    return FloorEpisodeRow(
        id=row.id,
        model=row.model,
        opened_at=row.opened_at,
        opened_by=row.opened_by,
        closed_at=row.closed_at,
        detail=dict(row.detail or {}),
    )


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

    def latest_listings(self, models: Sequence[str]) -> dict[str, tuple[Listed, ...] | None]:
        """:meth:`latest_listing` of several models, on one connection."""
        with self._read() as conn:
            return {m: listing_of(snapshot_on(conn, m)) for m in dict.fromkeys(models)}

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

    def floor_episodes(self, model: str | None = None) -> list[FloorEpisodeRow]:
        """Floor episodes, oldest first."""
        c = t.floor_episodes.c
        stmt = select(t.floor_episodes).order_by(c.opened_at, c.id)
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return [floor_episode_row(r) for r in conn.execute(stmt)]

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

        Decided by :func:`canary.core.floor.check_exclusion` on the list as it would be published
        with it. Raises :class:`FloorRefused` when it would lower usable below ``floor``, or keep
        the floor only by withholding a published quarantine, and ``force`` is not set (nothing
        is written). Otherwise the exclusion, its ``exclusion_added`` row and what the floor does
        (:func:`canary.core.floor.admit_exclusion`: withheld quarantines, the episode a forced
        breach opens, with ``actor`` as its author and ``policy_version``) are written in one
        transaction.
        """
        entry = Exclusion(model, tag, Layer.runtime, reason, since=now, until=until)
        with self._write() as conn:
            lock_guard(conn, model)
            layers = _layers_on(conn, model, now)
            before = layers.publish(model, builtin, floor, now)
            check = check_exclusion(before, entry, force=force, now=now)
            if not check.allowed:
                raise FloorRefused(model, tag, check.message)
            new_id: int = conn.execute(
                insert(t.exclusions)
                .values(
                    model=model, tag=tag, reason=reason, actor=actor, created_at=now, until=until
                )
                .returning(t.exclusions.c.id)
            ).scalar_one()
            admitted = admit_exclusion(
                before,
                layers.record,
                replace(entry, id=new_id),
                check,
                force=force,
                actor=actor,
                policy_version=policy_version,
                now=now,
            )
            write_audit(conn, [admitted.event], actor, policy_version, now)
            _apply_floor(conn, model, admitted.floor, now, actor, policy_version)
            bump_guard(conn, model)
        return ExclusionAdded(new_id, check)

    def remove_exclusion(
        self,
        exclusion_id: int,
        actor: str,
        reason: str,
        now: datetime,
        *,
        policy_version: str | None = None,
    ) -> Exclusion:
        """Removals are always allowed: they only give capacity back (the row is
        :func:`canary.core.floor.exclusion_removed`'s)."""
        c = t.exclusions.c
        with self._write() as conn:
            model = conn.execute(select(c.model).where(c.id == exclusion_id)).scalar_one_or_none()
            if model is None:
                raise UnknownExclusion(exclusion_id)
            lock_guard(conn, model)  # the guard first, as every writer of the layers takes it
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
            removed = runtime_exclusion(row)
            write_audit(
                conn, [exclusion_removed(removed, reason=reason)], actor, policy_version, now
            )
            bump_guard(conn, row.model)
        return removed

    def sync_floor(
        self,
        model: str,
        builtin: Sequence[Exclusion],
        floor: int,
        now: datetime,
        actor: str,
        policy_version: str | None,
    ) -> list[Event]:
        """Record what the floor does on the model's published list (withheld quarantines, floor
        episodes): read, reconciled by :func:`canary.core.floor.reconcile` and written in ONE
        transaction that holds the model's guard row, so no round, operator or other replica
        changes the layers between the read and the write. Idempotent; returns the events whose
        rows were written.

        A plain read comes first and ends it when there is nothing to record (the usual case, no
        write lock taken); a stale "nothing" only delays a change to the next sync, and whatever
        is recorded is decided again on the locked read.
        """
        layers = self.model_layers([model], now)[model]
        if reconcile(layers.publish(model, builtin, floor, now), layers.record).empty:
            return []
        with self._write() as conn:
            lock_guard(conn, model)
            layers = _layers_on(conn, model, now)
            changes = reconcile(layers.publish(model, builtin, floor, now), layers.record)
            return _apply_floor(conn, model, changes, now, actor, policy_version)

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


_RUNTIME_ACTIVE = (
    select(t.exclusions)
    .where(
        t.exclusions.c.removed_at.is_(None),
        or_(t.exclusions.c.until.is_(None), t.exclusions.c.until > bindparam("now")),
    )
    .order_by(t.exclusions.c.model, t.exclusions.c.tag, t.exclusions.c.id)
)
# Built once: a model's layers are read before every decision and publication.
_MODEL_RUNTIME = _RUNTIME_ACTIVE.where(t.exclusions.c.model == bindparam("model"))
_MODEL_QUARANTINES = (
    select(t.quarantines)
    .where(
        t.quarantines.c.model == bindparam("model"),
        t.quarantines.c.released_at.is_(None),
        t.quarantines.c.until > bindparam("now"),
    )
    .order_by(t.quarantines.c.tag, t.quarantines.c.id)
)
_OPEN_EPISODE = select(t.floor_episodes.c.id).where(
    t.floor_episodes.c.open_model == bindparam("model")
)


def _active_runtime(conn: Connection, model: str | None, now: datetime) -> list[Exclusion]:
    if model is None:
        rows = conn.execute(_RUNTIME_ACTIVE, {"now": now})
    else:
        rows = conn.execute(_MODEL_RUNTIME, {"model": model, "now": now})
    return [runtime_exclusion(r) for r in rows]


def _layers_on(conn: Connection, model: str, now: datetime) -> ModelLayers:
    rows = [
        quarantine_row(r) for r in conn.execute(_MODEL_QUARANTINES, {"model": model, "now": now})
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
    episode_open = conn.execute(_OPEN_EPISODE, {"model": model}).first() is not None
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
