"""The per-model guard row: what changes a model's published list takes it first.

A round's decision, the release of a quarantine whose end has come, an operator's exclusion and
a manual release each lock the model's row (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's
writing transactions are already exclusive) before anything else, and bump its version when they
change the layers, so an operator's floor check and a round's decision never interleave: a
decision made on an older version is refused and made again on the current layers. Recording
what the floor does on the published list (``sync_floor``) reads and writes under the lock too;
it records what the layers imply and changes none of them, so it leaves the version as it is.
Taking the guard first, always, keeps the lock order the same in every transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from canary.store import tables as t
from canary.store.engine import insert_ignoring_conflict


class Conflict(Exception):
    """A compare-and-set lost: someone else changed the state or the layers first."""


def lock_guard(conn: Connection, model: str) -> int:
    """Lock the model's guard row (creating it) and return its version."""
    c = t.model_guards.c
    conn.execute(insert_ignoring_conflict(conn, t.model_guards).values(model=model, version=0))
    version: int = conn.execute(
        select(c.version).where(c.model == model).with_for_update()
    ).scalar_one()
    return version


def bump_guard(conn: Connection, model: str) -> None:
    c = t.model_guards.c
    conn.execute(update(t.model_guards).where(c.model == model).values(version=c.version + 1))


def guard_version(conn: Connection, model: str) -> int:
    """The model's guard version without locking it (0 before anything changed its layers)."""
    c = t.model_guards.c
    version = conn.execute(select(c.version).where(c.model == model)).scalar_one_or_none()
    return int(version or 0)
