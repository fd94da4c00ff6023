"""Each endpoint's latest judged round and its contract results.

``latest_verdicts`` keeps each endpoint's largest round_id in round_verdicts, raised as verdicts
are written and pointed again when they are pruned, so the reads of every endpoint's latest
results start from one row per endpoint. The reader checks each row's round (abandoned? its
verdict pruned?) and, for a model where one fails or that has no row there, walks round_verdicts'
(model, tag, round_id) index instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Connection, delete, exists, func, insert, select

from canary.store import tables as t
from canary.store._decode import contract_result_row
from canary.store._index_walks import tags_of
from canary.store.engine import upsert
from canary.store.rows import ContractResultRow, ResultMark

_v = t.round_verdicts.c
# a verdict of a round not abandoned (ix_rounds_abandoned, not a join)
_STANDING = ~exists().where(t.rounds.c.id == _v.round_id, t.rounds.c.status == "abandoned")


def raise_latest_verdicts(conn: Connection, round_id: int, model: str, tags: list[str]) -> None:
    """Each endpoint's latest round with a verdict becomes ``round_id`` unless a later one
    already is (two replicas may write verdicts of two attempts at the same endpoint)."""
    table = t.latest_verdicts
    stmt = upsert(conn, table)
    stmt = stmt.on_conflict_do_update(
        index_elements=["model", "tag"],
        set_={"round_id": stmt.excluded.round_id},
        where=table.c.round_id < stmt.excluded.round_id,
    )
    conn.execute(stmt, [{"model": model, "tag": tag, "round_id": round_id} for tag in tags])


def fill_latest_verdicts(conn: Connection, model: str | None = None) -> None:
    """latest_verdicts from round_verdicts as they stand (all models, or ``model``'s), for
    verdicts written before the table existed (migration 0010)."""
    rows = select(_v.model, _v.tag, func.max(_v.round_id)).group_by(_v.model, _v.tag)
    if model is not None:
        rows = rows.where(_v.model == model)
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


def latest_judged_rounds(conn: Connection, models: Sequence[str]) -> dict[tuple[str, str], int]:
    """(model, tag) -> the latest round that judged the endpoint, abandoned attempts left out
    (their decision never came)."""
    latest = t.latest_verdicts.c
    pointed = {
        (model, tag): round_id
        for model, tag, round_id in conn.execute(
            select(latest.model, latest.tag, latest.round_id).where(latest.model.in_(models))
        )
    }
    standing: set[tuple[str, str, int]] = set()
    if pointed:
        stmt = select(_v.model, _v.tag, _v.round_id).where(
            _v.round_id.in_(sorted(set(pointed.values()))), _v.model.in_(models), _STANDING
        )
        standing = {(model, tag, round_id) for model, tag, round_id in conn.execute(stmt)}
    found = {key: rid for key, rid in pointed.items() if (*key, rid) in standing}
    walked = {model for (model, tag), rid in pointed.items() if (model, tag, rid) not in standing}
    walked.update(set(models) - {model for model, _ in pointed})
    if walked:
        found.update(walk_latest_judged_rounds(conn, sorted(walked)))
    return found


def walk_latest_judged_rounds(
    conn: Connection, models: Sequence[str]
) -> dict[tuple[str, str], int]:
    """:func:`latest_judged_rounds` from round_verdicts alone: its index walked per endpoint."""
    walk = tags_of(conn, t.round_verdicts, models)
    latest = (
        select(_v.round_id)
        .where(_v.model == walk.c.model, _v.tag == walk.c.tag, _STANDING)
        .order_by(_v.round_id.desc())
        .limit(1)
        .scalar_subquery()
    )
    stmt = select(walk.c.model, walk.c.tag, latest).where(walk.c.tag.is_not(None))
    return {(m, tag): rid for m, tag, rid in conn.execute(stmt) if rid is not None}


def _latest_rounds_of(
    conn: Connection, models: list[str]
) -> tuple[dict[tuple[str, str], int], list[ColumnElement[bool]]]:
    """Each endpoint's latest judged round, and the conditions on ``contract_results`` that
    find their results: by round first (the (round_id, model, tag) index finds a handful of
    rows). Rows of other endpoints judged in the same rounds come too: the caller keeps an
    endpoint's rows of its own latest round."""
    latest = latest_judged_rounds(conn, models) if models else {}
    c = t.contract_results.c
    return latest, [c.round_id.in_(sorted(set(latest.values()))), c.model.in_(models)]


def latest_results_of(
    conn: Connection, models: Sequence[str]
) -> dict[str, dict[str, dict[str, ContractResultRow]]]:
    """For each endpoint of each model, its contract results from the latest round that judged
    it: two queries in all."""
    out: dict[str, dict[str, dict[str, ContractResultRow]]] = {m: {} for m in models}
    latest, where = _latest_rounds_of(conn, list(out))
    if not latest:
        return out
    c, r = t.contract_results.c, t.rounds.c
    stmt = select(t.contract_results, r.scheduled_at).join(t.rounds, r.id == c.round_id)
    # sorted here, since an ORDER BY lets SQLite prefer walking every result of the models
    for row in sorted(conn.execute(stmt.where(*where)).mappings(), key=lambda row: row["id"]):
        if latest.get((row["model"], row["tag"])) == row["round_id"]:
            results = out[row["model"]].setdefault(row["tag"], {})
            results[row["contract"]] = contract_result_row(row, row["scheduled_at"])
    return out


def latest_marks_of(
    conn: Connection, models: Sequence[str]
) -> dict[str, dict[str, dict[str, ResultMark]]]:
    """:func:`latest_results_of` cut to what the status views show: three columns of each result
    and none of its answer sample."""
    out: dict[str, dict[str, dict[str, ResultMark]]] = {m: {} for m in models}
    latest, where = _latest_rounds_of(conn, list(out))
    if not latest:
        return out
    c = t.contract_results.c
    stmt = select(c.id, c.model, c.tag, c.contract, c.result, c.detail, c.round_id).where(*where)
    for _, model, tag, contract, result, detail, round_id in sorted(conn.execute(stmt)):
        if latest.get((model, tag)) == round_id:
            out[model].setdefault(tag, {})[contract] = ResultMark(result, detail, round_id)
    return out
