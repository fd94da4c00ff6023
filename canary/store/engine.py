"""Engine set-up and the two kinds of transaction the store uses.

SQLite: WAL, a busy timeout and foreign keys; the driver's own transaction handling is turned off
so that a writing transaction starts with ``BEGIN IMMEDIATE`` (it takes the write lock up front, so
two writers queue on the busy timeout instead of failing when a read turns into a write) while a
reading one starts with a plain ``BEGIN``. PostgreSQL runs through psycopg 3 with pool_pre_ping.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from enum import Enum
from typing import Any

from sqlalchemy import Connection, Engine, Table, create_engine, event, make_url
from sqlalchemy.exc import SQLAlchemyError

from canary.core.model import iso_utc
from canary.store.plain import SQLITE_BUSY_TIMEOUT_MS, Dialect, Reader, normalise_url

# What "the store is unreachable" looks like; anything else is a bug and must not pass for it.
STORE_ERRORS: tuple[type[Exception], ...] = (SQLAlchemyError, OSError)
_WRITE = "canary_write"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value) if value.tzinfo is not None else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
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
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def dialect_insert(dialect: str) -> Any:
    """The backend's ``insert``, which takes ON CONFLICT (imported here: the dialects are heavy)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def insert_ignoring_conflict(conn: Connection, table: Table, **target: Any) -> Any:
    """``INSERT ... ON CONFLICT [target] DO NOTHING`` on ``table`` for the connection's backend
    (``target``: ``index_elements`` and ``index_where`` of a partial unique index)."""
    return dialect_insert(conn.dialect.name)(table).on_conflict_do_nothing(**target)


class SaTransport:
    """Plain SQL (:mod:`canary.store.plain`) on one of the store's connections, in whatever
    transaction it is in."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.dialect: Dialect = "postgresql" if conn.dialect.name == "postgresql" else "sqlite"

    def fetch(
        self, sql: str, params: Mapping[str, object]
    ) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
        result = self._conn.exec_driver_sql(sql, dict(params))
        return list(result.keys()), result.all()


def plain(conn: Connection) -> Reader:
    return Reader(SaTransport(conn))


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

    def dialect_insert(self) -> Any:
        """INSERT with ON CONFLICT for this backend."""
        return dialect_insert(self.dialect)

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
