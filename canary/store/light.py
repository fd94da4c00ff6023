"""A read-only store on a driver connection of its own: ``canary status`` without SQLAlchemy.

Importing SQLAlchemy is about a third of what an operator's read command costs before it reads
anything (0.2 s of CPU here). :class:`LightStore` answers the reads of
:class:`canary.store.plain_reads.StoreReads` with the same plain SQL the store runs
(:mod:`canary.store.plain_reads`), on ``sqlite3`` or ``psycopg`` directly. It serves the URLs
whose meaning is plain (a SQLite file, a PostgreSQL URL); :func:`supports` tells which, and any
other URL goes through the store as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from canary.core.identity import Listed
from canary.core.model import EndpointState, Exclusion
from canary.store import plain_reads
from canary.store.plain import (
    SQLITE_BUSY_TIMEOUT_MS,
    Dialect,
    Reader,
    json_loads,
    normalise_url,
)
from canary.store.plain_reads import ModelLayers, ResultMark, WindowFigures, listing_of
from canary.store.rows import QuarantineRow, RoundRow

if TYPE_CHECKING:
    import sqlite3

    import psycopg

_SQLITE = "sqlite:///"
_POSTGRES = "postgresql+psycopg://"


def supports(url: str) -> bool:
    """A SQLite file (``sqlite:///path``, no options) or a PostgreSQL URL."""
    url = normalise_url(url)
    if url.startswith(_SQLITE):
        path = url[len(_SQLITE) :]
        return bool(path) and path != ":memory:" and "?" not in path
    return url.startswith(_POSTGRES)


class _Sqlite:
    dialect: Dialect = "sqlite"

    def __init__(self, path: str) -> None:
        import sqlite3

        # mode=rw: an existing database only (a read never creates one)
        self.conn: sqlite3.Connection = sqlite3.connect(
            f"file:{path}?mode=rw",
            uri=True,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )

    def fetch(
        self, sql: str, params: Mapping[str, object]
    ) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
        cursor = self.conn.execute(sql, dict(params))
        rows = cursor.fetchall()
        return [d[0] for d in cursor.description or ()], rows

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()


class _Postgres:
    dialect: Dialect = "postgresql"

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.types.json import set_json_loads

        self.conn: psycopg.Connection[Any] = psycopg.connect(
            "postgresql://" + url[len(_POSTGRES) :]
        )
        set_json_loads(json_loads, self.conn)

    def fetch(
        self, sql: str, params: Mapping[str, object]
    ) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, dict(params))
            return [d.name for d in cursor.description or ()], cursor.fetchall()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.conn.rollback()  # a read: end the transaction the first statement began

    def close(self) -> None:
        self.conn.close()


def _sqlite_path(url: str) -> str:
    return unquote(url[len(_SQLITE) :])


class LightStore:
    """The reads of :class:`canary.store.plain_reads.StoreReads` on one driver connection, each
    in a transaction of its own, as the store reads.

    It serves one command: each model's latest endpoint listing is read once and kept (the
    published list, the providers and the latency figures all start from it).
    """

    def __init__(self, url: str) -> None:
        url = normalise_url(url)
        if not supports(url):
            raise ValueError("LightStore reads a SQLite file or a PostgreSQL database")
        self._url = url
        self._driver: _Sqlite | _Postgres | None = None  # connected on the first read
        self._reader: Reader | None = None
        self._snapshots: dict[str, dict[str, dict[str, Any]] | None] = {}
        # each driver imported only for its own URLs (sqlite3 costs a PostgreSQL read 4 ms)
        if url.startswith(_SQLITE):
            import sqlite3

            self._errors: tuple[type[Exception], ...] = (sqlite3.Error, OSError)
        else:
            import psycopg

            self._errors = (psycopg.Error, OSError)

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return self._errors

    @contextmanager
    def _read(self) -> Iterator[Reader]:
        if self._driver is None or self._reader is None:
            url = self._url
            self._driver = _Sqlite(_sqlite_path(url)) if url.startswith(_SQLITE) else _Postgres(url)
            self._reader = Reader(self._driver)
        with self._driver.transaction():
            yield self._reader

    def dispose(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    # --- StoreReads -------------------------------------------------------------------------------

    def known_models(self) -> list[str]:
        with self._read() as r:
            return plain_reads.known_models(r)

    def known_tags(self, model: str) -> list[str]:
        return self.known_tags_of([model])[model]

    def known_tags_of(self, models: Sequence[str]) -> dict[str, list[str]]:
        with self._read() as r:
            return plain_reads.known_tags_of(r, models)

    def recent_rounds(self, model: str | None = None, limit: int = 20) -> list[RoundRow]:
        with self._read() as r:
            return plain_reads.recent_rounds(r, model, limit)

    def model_layers(self, models: Sequence[str], now: datetime) -> dict[str, ModelLayers]:
        snapshots = self.latest_snapshots(models)
        with self._read() as r:
            return plain_reads.model_layers(r, models, now, snapshots)

    def round_spend(self, since: datetime, model: str | None = None) -> dict[str, float]:
        with self._read() as r:
            return plain_reads.round_spend(r, since, model)

    def last_closed_rounds(self, model: str | None = None) -> dict[str, RoundRow]:
        with self._read() as r:
            return plain_reads.last_closed_rounds(r, model)

    def load_states_of(self, models: Sequence[str]) -> dict[str, dict[str, EndpointState]]:
        with self._read() as r:
            return plain_reads.states_of(r, models)

    def latest_marks_of(self, models: Sequence[str]) -> dict[str, dict[str, dict[str, ResultMark]]]:
        with self._read() as r:
            return plain_reads.latest_marks_of(r, models)

    def quarantines(
        self, model: str | None = None, active_only: bool = True, now: datetime | None = None
    ) -> list[QuarantineRow]:
        with self._read() as r:
            return plain_reads.quarantines(r, model, active_only, now)

    def active_exclusions(self, model: str | None, now: datetime) -> list[Exclusion]:
        with self._read() as r:
            return plain_reads.active_runtime(r, model, now)

    def latest_listings(self, models: Sequence[str]) -> dict[str, tuple[Listed, ...] | None]:
        return {m: listing_of(s) for m, s in self.latest_snapshots(models).items()}

    def latest_snapshots(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, Any]] | None]:
        missing = [m for m in dict.fromkeys(models) if m not in self._snapshots]
        if missing:
            with self._read() as r:
                self._snapshots.update(plain_reads.latest_snapshots(r, missing))
        return {m: self._snapshots[m] for m in dict.fromkeys(models)}

    def latency_figures_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, WindowFigures]]]:
        with self._read() as r:
            return plain_reads.latency_figures_of(r, models)

    def ttft_recent(self, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]:
        with self._read() as r:
            return plain_reads.ttft_recent(r, model, since, per_tag)
