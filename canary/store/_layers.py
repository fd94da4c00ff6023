"""The runtime layer (operators' exclusions, weighed against the floor) and maintenance windows,
listings, and what the store remembers of each model's floor (withheld quarantines, floor
episodes).

The floor rules are canary.core.floor's; an operator's exclusion is checked and inserted under
the model's guard row (see :mod:`canary.store._guard`), so no round's decision interleaves, and
:meth:`LayersMixin.sync_floor` reads, reconciles and records a model's floor under it too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import ColumnElement, Connection, RowMapping, Table, insert, or_, select, update

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.events import Event, MaintenanceAdded
from canary.core.floor import (
    ExclusionCheck,
    FloorChanges,
    FloorRecord,
    admit_exclusion,
    check_exclusion,
    exclusion_removed,
    reconcile,
)
from canary.core.model import Exclusion, Layer, iso_utc
from canary.store import tables as t
from canary.store._audit_rows import write_audit
from canary.store._decode import listing_of, quarantine_exclusion, quarantine_row, runtime_exclusion
from canary.store._guard import bump_guard, guard_version, lock_guard
from canary.store._snapshots import latest_snapshots
from canary.store.engine import StoreBase, insert_ignoring_conflict
from canary.store.latency import measured_of
from canary.store.rows import (
    FloorOf,
    FloorRefused,
    ModelLayers,
    QuarantineRow,
    UnknownExclusion,
    WindowInForce,
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
    detail: dict[str, JsonValue]

    @property
    def open(self) -> bool:
        return self.closed_at is None

    @property
    def policy_version(self) -> str | None:
        value = self.detail.get("policy_version")
        return None if value is None else str(value)


def floor_episode_row(row: RowMapping) -> FloorEpisodeRow:
    return FloorEpisodeRow(
        id=row["id"],
        model=row["model"],
        opened_at=row["opened_at"],
        opened_by=row["opened_by"],
        closed_at=row["closed_at"],
        detail=dict(row["detail"] or {}),
    )


_x = t.exclusions.c
# the operator's entries: runtime exclusions, and maintenance windows (never an exclusion)
_TABLES = {Layer.runtime: t.exclusions, Layer.maintenance: t.maintenance}


def _active_runtime(now: datetime, table: Table = t.exclusions) -> tuple[ColumnElement[bool], ...]:
    c = table.c
    return c.removed_at.is_(None), or_(c.until.is_(None), c.until > now)


def active_runtime(
    conn: Connection, model: str | None, now: datetime, layer: Layer = Layer.runtime
) -> list[Exclusion]:
    table = _TABLES[layer]
    c = table.c
    stmt = select(table).where(*_active_runtime(now, table)).order_by(c.model, c.tag, c.id)
    if model is not None:
        stmt = stmt.where(c.model == model)
    return [runtime_exclusion(row, layer) for row in conn.execute(stmt).mappings()]


def model_layers(
    conn: Connection, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
) -> dict[str, ModelLayers]:
    """Listing, runtime entries, active quarantines and the floor record of each model: four
    statements whatever the number of models (two more when ``figures_of`` names some of them:
    their 24 h figures, which a task profile covering them is held to; the others' are left
    empty)."""
    wanted = list(dict.fromkeys(models))
    if not wanted:
        return {}
    q, e = t.quarantines.c, t.floor_episodes.c
    held: dict[str, list[QuarantineRow]] = {m: [] for m in wanted}
    active = select(t.quarantines).where(
        q.model.in_(wanted), q.released_at.is_(None), q.until > now
    )
    for row in conn.execute(active.order_by(q.model, q.tag, q.id)).mappings():
        held[row["model"]].append(quarantine_row(row))
    open_episodes = set(
        conn.execute(select(e.open_model).where(e.open_model.in_(wanted))).scalars()
    )
    runtime: dict[str, list[Exclusion]] = {m: [] for m in wanted}
    stmt = select(t.exclusions).where(_x.model.in_(wanted), *_active_runtime(now))
    for row in conn.execute(stmt.order_by(_x.model, _x.tag, _x.id)).mappings():
        runtime[row["model"]].append(runtime_exclusion(row))
    snapshots = latest_snapshots(conn, wanted)
    covered = set(figures_of)
    held_to = [m for m in wanted if m in covered]
    measured = measured_of(conn, held_to) if held_to else {}
    out = {}
    for model in wanted:
        rows = held[model]
        out[model] = ModelLayers(
            listing_of(snapshots[model]),
            tuple(runtime[model]),
            tuple(quarantine_exclusion(q) for q in rows),
            FloorRecord(
                {q.id: q.tag for q in rows if q.withheld_at is not None}, model in open_episodes
            ),
            measured.get(model, {}),
        )
    return out


class LayersMixin(StoreBase):
    # --- reads ----------------------------------------------------------------------------------

    def guard_version(self, model: str) -> int:
        with self._read() as conn:
            return guard_version(conn, model)

    def model_layers(
        self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
    ) -> dict[str, ModelLayers]:
        """Listing, runtime entries, active quarantines and the floor record of each model
        (and the 24 h figures a task profile is held to, of the models in ``figures_of``)."""
        with self._read() as conn:
            return model_layers(conn, models, now, figures_of=figures_of)

    def active_exclusions(
        self, model: str | None, now: datetime, layer: Layer = Layer.runtime
    ) -> list[Exclusion]:
        """The runtime exclusions in force at ``now`` (the maintenance windows with
        ``Layer.maintenance``)."""
        with self._read() as conn:
            return active_runtime(conn, model, now, layer)

    def floor_episodes(self, model: str | None = None) -> list[FloorEpisodeRow]:
        """Floor episodes, oldest first."""
        c = t.floor_episodes.c
        stmt = select(t.floor_episodes).order_by(c.opened_at, c.id)
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return [floor_episode_row(row) for row in conn.execute(stmt).mappings()]

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
        controls: Controls = NO_CONTROLS,
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
            layers = model_layers(conn, [model], now)[model]
            before = layers.publish(model, builtin, floor, now, controls=controls)
            check = check_exclusion(before, entry, force=force, now=now)
            if not check.allowed:
                raise FloorRefused(model, tag, check.message)
            new_id = _insert(conn, t.exclusions, entry, actor)
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

    def add_maintenance(
        self,
        model: str,
        tag: str,
        reason: str,
        actor: str,
        until: datetime,
        now: datetime,
        *,
        policy_version: str | None = None,
    ) -> int:
        """Add a maintenance window (its ``maintenance_added`` row in the same transaction).
        Never weighed against the floor: the endpoints it names stay usable capacity. Written
        under the model's guard, so a round deciding meanwhile decides again with it. Raises
        :class:`WindowInForce` when one for the same tag or slug is in force already."""
        entry = Exclusion(model, tag, Layer.maintenance, reason, since=now, until=until)
        with self._write() as conn:
            lock_guard(conn, model)
            for window in active_runtime(conn, model, now, Layer.maintenance):
                if window.tag == tag:
                    raise WindowInForce(
                        f"{tag} of {model} is under maintenance until {iso_utc(window.until)} "
                        f"already (id {window.id}): remove that window first"
                    )
            new_id = _insert(conn, t.maintenance, entry, actor)
            added = MaintenanceAdded(model=model, tag=tag, id=new_id, reason=reason, until=until)
            write_audit(conn, [added], actor, policy_version, now)
            bump_guard(conn, model)
        return new_id

    def remove_exclusion(
        self,
        exclusion_id: int,
        actor: str,
        reason: str,
        now: datetime,
        *,
        policy_version: str | None = None,
        layer: Layer = Layer.runtime,
    ) -> Exclusion:
        """Removals are always allowed: they only give capacity back (the row is
        :func:`canary.core.floor.exclusion_removed`'s). With ``Layer.maintenance``, the
        maintenance window of that id ends now (a ``maintenance_removed`` row)."""
        table = _TABLES[layer]
        c = table.c
        with self._write() as conn:
            model = conn.execute(select(c.model).where(c.id == exclusion_id)).scalar_one_or_none()
            if model is None:
                raise UnknownExclusion(exclusion_id, layer)
            lock_guard(conn, model)  # the guard first, as every writer of the layers takes it
            row = (
                conn.execute(
                    select(table)
                    .where(c.id == exclusion_id, c.removed_at.is_(None))
                    .with_for_update()
                )
                .mappings()
                .one_or_none()
            )
            if row is None:
                raise UnknownExclusion(exclusion_id, layer)
            conn.execute(
                update(table)
                .where(c.id == exclusion_id)
                .values(removed_at=now, removed_by=actor, remove_reason=reason)
            )
            removed = runtime_exclusion(row, layer)
            event = exclusion_removed(removed, reason=reason)
            write_audit(conn, [event], actor, policy_version, now)
            bump_guard(conn, model)
        return removed

    def sync_floor(
        self,
        model: str,
        builtin: Sequence[Exclusion],
        floor: int,
        now: datetime,
        actor: str,
        policy_version: str | None,
        *,
        controls: Controls = NO_CONTROLS,
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
        floors = [FloorOf(model, tuple(builtin), floor, controls)]
        return self.sync_floors(floors, now, actor, policy_version)

    def sync_floors(
        self, floors: Sequence[FloorOf], now: datetime, actor: str, policy_version: str | None
    ) -> list[Event]:
        """:meth:`sync_floor` of several models: ONE plain read of all their layers (four
        statements, whatever their number: between rounds, every model has nothing to record),
        then each model that has something read, reconciled and written in its own transaction
        under its guard. Returns the events whose rows were written."""
        read = self.model_layers([f.model for f in floors], now)
        written: list[Event] = []
        for f in floors:
            published = read[f.model].publish(f.model, f.builtin, f.floor, now, controls=f.controls)
            if reconcile(published, read[f.model].record).empty:
                continue
            with self._write() as conn:
                lock_guard(conn, f.model)
                layers = model_layers(conn, [f.model], now)[f.model]
                published = layers.publish(f.model, f.builtin, f.floor, now, controls=f.controls)
                changes = reconcile(published, layers.record)
                written += _apply_floor(conn, f.model, changes, now, actor, policy_version)
        return written


def _insert(conn: Connection, table: Table, entry: Exclusion, actor: str) -> int:
    values = {"model": entry.model, "tag": entry.tag, "reason": entry.reason, "actor": actor}
    stmt = insert(table).values(created_at=entry.since, until=entry.until, **values)
    new_id: int = conn.execute(stmt.returning(table.c.id)).scalar_one()
    return new_id


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
    for moves, held, withheld_at in (
        (changes.withhold, q.withheld_at.is_(None), now),
        (changes.republish, q.withheld_at.is_not(None), None),
    ):
        for quarantine_id, event in moves:
            stmt = update(t.quarantines).where(q.id == quarantine_id, held)
            if conn.execute(stmt.values(withheld_at=withheld_at)).rowcount:
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
                detail=changes.open_episode.detail,
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
