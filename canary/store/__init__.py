"""Storage: SQLAlchemy models, Alembic migrations, the repository and the leader lease.

:class:`Store` is imported on first use: a command that only reads goes through
:mod:`canary.store.light` and never imports SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from canary.store.rows import (
    AuditRow,
    ContractResultRow,
    DriftChange,
    DriftRow,
    ExclusionRow,
    FloorRefused,
    HistoryRow,
    LeaseRow,
    NoActiveQuarantine,
    ProbeRow,
    QuarantineRow,
    RoundRow,
    UnknownExclusion,
    UnknownRound,
)

if TYPE_CHECKING:
    from canary.store._audit_rows import AuditRows
    from canary.store.repository import Store

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
    raise AttributeError(f"module 'canary.store' has no attribute {name!r}")
