"""Storage: SQLAlchemy Core tables, Alembic migrations, the repository and the leader lease.

:class:`Store` is the one way to the database; what it hands out are the frozen rows of
:mod:`canary.store.rows` and :mod:`canary.store.log_rows`.
"""

from __future__ import annotations

from canary.store._audit_rows import AuditRows
from canary.store.log_rows import (
    AuditRow,
    DriftChange,
    DriftRow,
    HistoryRow,
    LeaseRow,
    ProbeRow,
)
from canary.store.repository import Store
from canary.store.rows import (
    ContractResultRow,
    FloorRefused,
    NoActiveQuarantine,
    QuarantineRow,
    RoundRow,
    UnknownExclusion,
    UnknownRound,
)

__all__ = [
    "AuditRow",
    "AuditRows",
    "ContractResultRow",
    "DriftChange",
    "DriftRow",
    "FloorRefused",
    "HistoryRow",
    "LeaseRow",
    "NoActiveQuarantine",
    "ProbeRow",
    "QuarantineRow",
    "RoundRow",
    "Store",
    "UnknownExclusion",
    "UnknownRound",
]
