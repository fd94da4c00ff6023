"""Storage: SQLAlchemy models, Alembic migrations, the repository and the leader lease.

:class:`Store` is imported on first use: a command that only reads goes through
:mod:`canary.store.light` and never imports SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from canary.store.rows import (
    ContractResultRow,
    FloorRefused,
    NoActiveQuarantine,
    QuarantineRow,
    RoundRow,
    UnknownExclusion,
    UnknownRound,
)

if TYPE_CHECKING:
    from canary.store._audit_rows import AuditRows
    from canary.store.log_rows import (
        AuditRow,
        DriftChange,
        DriftRow,
        ExclusionRow,
        HistoryRow,
        LeaseRow,
        ProbeRow,
    )
    from canary.store.repository import Store

# defined on first use: a read command builds none of these classes (see log_rows)
_LOG_ROWS = {
    "AuditRow",
    "DriftChange",
    "DriftRow",
    "ExclusionRow",
    "HistoryRow",
    "LeaseRow",
    "ProbeRow",
}

__all__ = [
    "AuditRow",
    "AuditRows",
    "ContractResultRow",
    "DriftChange",
    "DriftRow",
    "ExclusionRow",
    "HistoryRow",
    "LeaseRow",
    "NoActiveQuarantine",
    "ProbeRow",
    "FloorRefused",
    "QuarantineRow",
    "RoundRow",
    "Store",
    "UnknownExclusion",
    "UnknownRound",
]


def __getattr__(name: str) -> object:
    if name == "Store":
        from canary.store.repository import Store

        return Store
    if name == "AuditRows":
        from canary.store._audit_rows import AuditRows

        return AuditRows
    if name in _LOG_ROWS:
        from canary.store import log_rows

        return getattr(log_rows, name)
    raise AttributeError(f"module 'canary.store' has no attribute {name!r}")
