"""Reads that hop along an index, one step a value, instead of reading every row: the distinct
values of an indexed column, and each model's distinct tags (neither SQLite nor PostgreSQL skips
through an index on its own). And a list of values bound as ONE parameter, so a statement over
hundreds of models stays short and quick to plan."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import (
    ARRAY,
    CTE,
    BigInteger,
    Connection,
    Select,
    String,
    Table,
    func,
    literal,
    select,
)
from sqlalchemy.sql.selectable import TableValuedAlias


def each(conn: Connection, values: Sequence[str] | Sequence[int]) -> TableValuedAlias:
    """``values`` as a derived table, one row each in a column ``value``: ``unnest`` of an array
    on PostgreSQL, ``json_each`` of a JSON array on SQLite."""
    if conn.dialect.name == "postgresql":
        kind = BigInteger() if values and isinstance(values[0], int) else String()
        array = literal(list(values), ARRAY(kind))
        return func.unnest(array).table_valued("value").render_derived()
    return func.json_each(json.dumps(list(values))).table_valued("value")


def distinct_values(table: Table, name: str) -> Select[str]:
    """The distinct values of ``table.name`` (the first column of an index), smallest first."""
    column, x = table.c[name], table.alias()
    walk = select(func.min(column).label("value")).cte(f"{table.name}_{name}s", recursive=True)
    step = select(func.min(x.c[name])).where(x.c[name] > walk.c.value).scalar_subquery()
    walk = walk.union_all(select(step).where(walk.c.value.is_not(None)))
    return select(walk.c.value).where(walk.c.value.is_not(None))


def tags_of(conn: Connection, table: Table, models: Sequence[str]) -> CTE:
    """``(model, tag)``: each of ``models``' distinct tags in ``table``, down its (model, tag)
    index (a last row per model has tag NULL)."""
    listed, x, y = each(conn, models), table.alias(), table.alias()
    first = select(func.min(x.c.tag)).where(x.c.model == listed.c.value).scalar_subquery()
    walk = select(listed.c.value.label("model"), first.label("tag")).cte(
        f"{table.name}_tags", recursive=True
    )
    step = select(func.min(y.c.tag)).where(y.c.model == walk.c.model, y.c.tag > walk.c.tag)
    return walk.union_all(
        select(walk.c.model, step.scalar_subquery()).where(walk.c.tag.is_not(None))
    )
