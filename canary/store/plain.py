"""Reads written as plain SQL, run through SQLAlchemy or straight through the database driver.

The reads an operator's ``canary status`` needs are written once, here and in
:mod:`canary.store.plain_reads`, as portable SQL. The store runs them on its SQLAlchemy
connections (inside its transactions, like every other read); :class:`canary.store.light.LightStore`
runs them on a driver connection of its own, so that a command which only reads never imports
SQLAlchemy (a third of such a command's start-up).

What SQLAlchemy's column types do on the way out is done here from :data:`KINDS`, the kind of
each column that needs converting (a test checks it against :mod:`canary.store.tables`):
SQLite keeps times as naive UTC text and JSON as text; PostgreSQL's driver returns aware times
and parsed JSON. Times are bound the same way: naive UTC text on SQLite (in SQLAlchemy's format,
so that they compare with what it wrote), aware on PostgreSQL.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import orjson

SQLITE_BUSY_TIMEOUT_MS = 30_000
_ZERO = timedelta(0)

Kind = Literal["time", "json", "bool"]
Dialect = Literal["sqlite", "postgresql"]

# Per table, the columns whose values need converting (every other value is used as the driver
# returns it). Kept in step with canary.store.tables by tests/store/test_store_plain.py.
KINDS: dict[str, dict[str, Kind]] = {
    "rounds": {
        "scheduled_at": "time", "started_at": "time", "finished_at": "time",
        "heartbeat_at": "time", "checksums": "json", "skipped": "json", "detail": "json",
    },
    "probes": {"attribution_ok": "bool", "ttft_censored": "bool", "at": "time"},
    "ttft_buckets": {"hour": "time"},
    "latency_figures": {"at": "time"},
    "contract_results": {"language_anomaly": "bool"},
    "round_verdicts": {},
    "latest_verdicts": {},
    "endpoint_state": {
        "streaks": "json", "recovery_evidence": "json", "quarantined_since": "time",
        "quarantined_until": "time", "causes": "json", "last_quarantine_at": "time",
        "next_language_since": "time", "updated_at": "time", "counted_slot": "time",
    },
    "quarantines": {
        "started_at": "time", "until": "time", "released_at": "time", "evidence": "json",
        "causes": "json", "withheld_at": "time",
    },
    "floor_episodes": {"opened_at": "time", "closed_at": "time", "detail": "json"},
    "model_guards": {},
    "exclusions": {
        "created_at": "time", "until": "time", "removed_at": "time",
    },
    "audit": {
        "at": "time", "detail": "json", "evidence": "json", "notified_at": "time",
        "next_attempt_at": "time",
    },
    "endpoint_snapshots": {"at": "time", "meta": "json"},
    "drift_events": {"at": "time", "old": "json", "new": "json", "alert": "bool"},
    "budget_days": {"alerted_at": "time"},
    "leases": {"acquired_at": "time", "expires_at": "time"},
}  # fmt: skip


class SqlRow(Protocol):
    """A row read by name (``row.model``), as SQLAlchemy's rows are."""

    def __getattr__(self, name: str) -> Any: ...


class Transport(Protocol):
    """Where plain SQL runs: one connection, inside whatever transaction it is in."""

    @property
    def dialect(self) -> Dialect: ...

    def fetch(
        self, sql: str, params: Mapping[str, object]
    ) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
        """The result's column names and rows; ``sql`` in the driver's own parameter style."""
        ...


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg 3 here."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def utc(value: Any) -> datetime | None:
    """A stored time as an aware UTC datetime (SQLite: naive UTC text)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None or value.utcoffset() == _ZERO:  # naive UTC, or the session's UTC
        return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
    return value.astimezone(UTC)  # type: ignore[no-any-return]


def json_loads(text: str | bytes) -> Any:
    """JSON as the store wrote it: by orjson, or by json where orjson refuses (NaN)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _json(value: Any) -> Any:
    return json_loads(value) if isinstance(value, str | bytes) else value


def _bool(value: Any) -> Any:
    return None if value is None else bool(value)


_CONVERT = {"time": utc, "json": _json, "bool": _bool}


def _converter(kind: Kind) -> Callable[[Any], Any]:
    """The conversion of one column of one result; a time column remembers the values it has
    converted (rows of one round share its times)."""
    if kind != "time":
        return _CONVERT[kind]
    seen: dict[Any, datetime | None] = {}

    def time_of(value: Any) -> datetime | None:
        found = seen.get(value)
        if found is None:
            found = seen[value] = utc(value)
        return found

    return time_of


def stored_utc(value: datetime) -> datetime:
    """An aware time as the store keeps it (UTC); a naive one is refused, whatever writes it."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"naive datetime {value.isoformat()} given to the store: pass an aware one"
        )
    return value.astimezone(UTC)


def sqlite_time(value: datetime) -> str:
    """A time as SQLAlchemy writes it to SQLite (naive UTC, microseconds always shown)."""
    return stored_utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")


# One row type per column list, process-wide: a reader lives for one transaction, and building a
# namedtuple class costs more than reading a few rows.
_ROW_TYPES: dict[tuple[str, ...], type] = {}


class Reader:
    """Runs plain SQL with ``:name`` parameters on a :class:`Transport`, converting values."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.dialect: Dialect = transport.dialect

    def rows(
        self,
        sql: str,
        params: Mapping[str, object] | None = None,
        *,
        table: str | None = None,
        kinds: Mapping[str, Kind] | None = None,
    ) -> list[SqlRow]:
        """The rows of ``sql``; values of the columns named in ``KINDS[table]`` and ``kinds``
        converted as SQLAlchemy's column types would."""
        names, raw = self.transport.fetch(self._driver_sql(sql), self._bind(params or {}))
        wanted = {**(KINDS[table] if table else {}), **(kinds or {})}
        converters = [(i, _converter(wanted[n])) for i, n in enumerate(names) if n in wanted]
        key = tuple(names)
        row_type = _ROW_TYPES.get(key)
        if row_type is None:
            row_type = _ROW_TYPES[key] = namedtuple("Row", names, rename=True)  # noqa: PYI024
        out: list[SqlRow] = []
        for values in raw:
            if converters:
                values = list(values)
                for i, convert in converters:
                    values[i] = convert(values[i])
            out.append(row_type(*values))
        return out

    def values(
        self, sql: str, params: Mapping[str, object] | None = None
    ) -> Sequence[Sequence[Any]]:
        """The rows of ``sql`` as the driver returns them (no value converted)."""
        return self.transport.fetch(self._driver_sql(sql), self._bind(params or {}))[1]

    def scalars(self, sql: str, params: Mapping[str, object] | None = None) -> list[Any]:
        return [values[0] for values in self.values(sql, params)]

    def each(
        self, name: str, values: Sequence[str] | Sequence[int], params: dict[str, object]
    ) -> str:
        """A derived table of ``values``, one row each in a column ``value``, bound as ONE
        parameter ``name`` (a statement over hundreds of models stays short and quick to plan):
        ``unnest`` of an array on PostgreSQL, ``json_each`` of a JSON array on SQLite."""
        if self.dialect == "sqlite":
            params[name] = _json_list(values)
            return f"SELECT value FROM json_each(:{name})"
        params[name] = list(values)
        kind = "bigint" if values and isinstance(values[0], int) else "varchar"
        return f"SELECT unnest(CAST(:{name} AS {kind}[])) AS value"

    def in_(
        self, name: str, values: Sequence[str] | Sequence[int], params: dict[str, object]
    ) -> str:
        """``IN (...)`` over ``values``, bound as one parameter (see :meth:`each`)."""
        return f"IN ({self.each(name, values, params)})"

    def _driver_sql(self, sql: str) -> str:
        if self.dialect == "sqlite":
            return sql  # sqlite3 reads :name itself
        if "%" in sql:
            raise ValueError("plain SQL for PostgreSQL must not contain '%'")
        return _to_pyformat(sql)

    def _bind(self, params: Mapping[str, object]) -> dict[str, object]:
        if self.dialect != "sqlite":
            return dict(params)
        return {k: sqlite_time(v) if isinstance(v, datetime) else v for k, v in params.items()}


_NAMED = re.compile(r"(?<!:):([A-Za-z_][A-Za-z0-9_]*)")


def _to_pyformat(sql: str) -> str:
    """``:name`` to psycopg's ``%(name)s``, leaving ``::`` casts alone."""
    return _NAMED.sub(r"%(\1)s", sql)


def _json_list(values: Sequence[object]) -> str:
    return json.dumps(list(values))
