"""A round's many rows written as one plain ``executemany`` on the driver.

SQLAlchemy's Core insert runs every value of every row through Python (its bind processors and
parameter building), which costs more than the insert itself for the hundred-odd probe rows a
model's round writes. These rows hold plain values (text, numbers, booleans, None) and aware
times, the only ones that need converting: as the column type would, once per distinct value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Connection, Float, Integer, String, Table

from canary.store.plain import sqlite_time, stored_utc
from canary.store.tables import UTCDateTime

# Types whose values the driver binds as SQLAlchemy would (Text is a String)
_PLAIN = (Boolean, Float, Integer, String)

# per backend, table, columns and conflict clause: the statement and the time columns' places
_STATEMENTS: dict[tuple[str, str, tuple[str, ...], str], tuple[str, list[int]]] = {}


def insert_rows(
    conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], on_conflict: str = ""
) -> None:
    """INSERT ``rows`` (each with the same columns) into ``table`` in one executemany;
    ``on_conflict``: an ``ON CONFLICT ...`` clause both backends read alike."""
    if not rows:
        return
    columns = tuple(rows[0])
    sqlite = conn.dialect.name == "sqlite"
    key = (conn.dialect.name, table.name, columns, on_conflict)
    found = _STATEMENTS.get(key)
    if found is None:
        _check_plain(table, columns)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join([mark] * len(columns))
        sql = f'INSERT INTO "{table.name}" ({names}) VALUES ({marks}) {on_conflict}'
        times = [i for i, c in enumerate(columns) if isinstance(table.c[c].type, UTCDateTime)]
        found = _STATEMENTS[key] = (sql, times)
    sql, times = found
    converted: dict[datetime, Any] = {}

    def time_value(value: datetime | None) -> Any:
        if value is None:
            return None
        stored = converted.get(value)
        if stored is None:
            stored = converted[value] = sqlite_time(value) if sqlite else stored_utc(value)
        return stored

    params = []
    for row in rows:
        values = [row[c] for c in columns]
        for i in times:
            values[i] = time_value(values[i])
        params.append(tuple(values))
    conn.exec_driver_sql(sql, params)


def _check_plain(table: Table, columns: tuple[str, ...]) -> None:
    """Refuse what only SQLAlchemy's insert would get right: a column whose values it converts
    (JSON, say), or a column left out that it would fill from a Python-side default."""
    for c in table.c:
        if c.name in columns and not isinstance(c.type, (*_PLAIN, UTCDateTime)):
            raise TypeError(f"{table.name}.{c.name} ({c.type}) needs SQLAlchemy's insert")
        if c.name not in columns and (c.default is not None or c.onupdate is not None):
            raise TypeError(f"{table.name}.{c.name} has a Python-side default: use Core's insert")
