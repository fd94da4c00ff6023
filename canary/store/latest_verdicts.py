"""Each endpoint's latest round with a verdict (``latest_verdicts``): its largest round_id in
round_verdicts, kept as verdicts are written and pruned, so that the operator reads of every
endpoint's latest results start from one row per endpoint (see
:func:`canary.store.plain_reads._latest_judged_rounds`, which checks each row's round)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, select

from canary.store import tables as t
from canary.store.engine import dialect_insert


def raise_latest_verdicts(conn: Connection, round_id: int, model: str, tags: list[str]) -> None:
    """Each endpoint's latest round with a verdict becomes ``round_id`` unless a later one
    already is (two replicas may write verdicts of two attempts at the same endpoint)."""
    table = t.latest_verdicts
    stmt = dialect_insert(conn.dialect.name)(table)
    stmt = stmt.on_conflict_do_update(
        index_elements=["model", "tag"],
        set_={"round_id": stmt.excluded.round_id},
        where=table.c.round_id < stmt.excluded.round_id,
    )
    conn.execute(stmt, [{"model": model, "tag": tag, "round_id": round_id} for tag in tags])


def fill_latest_verdicts(conn: Connection, model: str | None = None) -> None:
    """latest_verdicts from round_verdicts as they stand (all models, or ``model``'s), for
    verdicts written before the table existed (migration 0010)."""
    v = t.round_verdicts.c
    rows = select(v.model, v.tag, func.max(v.round_id)).group_by(v.model, v.tag)
    if model is not None:
        rows = rows.where(v.model == model)
    conn.execute(insert(t.latest_verdicts).from_select(["model", "tag", "round_id"], rows))


def repoint_after_prune(conn: Connection, pruned: list[int]) -> None:
    """The models whose latest verdict was in a pruned round point again at what is left of
    their verdicts (usually nothing: endpoints that left the listing long ago)."""
    latest = t.latest_verdicts
    models = conn.execute(
        select(latest.c.model).where(latest.c.round_id.in_(pruned)).distinct()
    ).scalars()
    for model in list(models):
        conn.execute(delete(latest).where(latest.c.model == model))
        fill_latest_verdicts(conn, model)
