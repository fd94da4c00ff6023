"""Engine set-up and the two kinds of transaction the store uses.

SQLite: WAL, a busy timeout and foreign keys; the driver's own transaction handling is turned off
so that a writing transaction starts with ``BEGIN IMMEDIATE`` (it takes the write lock up front, so
two writers queue on the busy timeout instead of failing when a read turns into a write) while a
reading one starts with a plain ``BEGIN``. PostgreSQL runs through psycopg 3 with pool_pre_ping.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from enum import Enum

from pydantic import JsonValue
from sqlalchemy import Connection, Engine, Table, TextClause, create_engine, event, make_url
from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry

from canary.core.model import iso_utc

# What "the store is unreachable" looks like; anything else is a bug and must not pass for it.
STORE_ERRORS: tuple[type[Exception], ...] = (SQLAlchemyError, OSError)
SQLITE_BUSY_TIMEOUT_MS = 30_000
_WRITE = "canary_write"


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg 3 here."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _json_default(value: object) -> JsonValue:
    if isinstance(value, datetime):
        return iso_utc(value) if value.tzinfo is not None else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        member: JsonValue = value.value
        return member
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: object) -> str:
    """JSON for the JSON columns: datetimes become ISO-8601 UTC with Z, enums their value."""
    return json.dumps(value, default=_json_default, ensure_ascii=False)


def make_engine(url: str) -> Engine:
    parsed = make_url(normalise_url(url))
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            parsed, json_serializer=dumps, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        )
        _configure_sqlite(engine)
        return engine
    return create_engine(parsed, json_serializer=dumps, pool_pre_ping=True)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        for pragma in (
            "PRAGMA journal_mode=WAL",
            f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
            "PRAGMA foreign_keys=ON",
            "PRAGMA synchronous=NORMAL",
        ):
            dbapi_connection.execute(pragma)

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def upsert(conn: Connection, table: Table) -> PostgresInsert | SqliteInsert:
    """The backend's ``INSERT`` on ``table``, which takes ``ON CONFLICT`` (the dialect's module is
    imported here, for the backend in use only)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgres_insert

        return postgres_insert(table)
    return sqlite_insert(table)


def insert_ignoring_conflict(
    conn: Connection,
    table: Table,
    *,
    index_elements: list[str] | None = None,
    index_where: TextClause | None = None,
) -> PostgresInsert | SqliteInsert:
    """``INSERT ... ON CONFLICT [target] DO NOTHING`` on ``table`` (the target: the columns and
    the predicate of a partial unique index)."""
    return upsert(conn, table).on_conflict_do_nothing(
        index_elements=index_elements, index_where=index_where
    )


class StoreBase:
    """The engine and the transaction helpers the store's parts share."""

    errors: tuple[type[Exception], ...] = STORE_ERRORS  # what "unreachable" raises

    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One writing transaction: committed on success, rolled back on any exception."""
        with self.engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn
