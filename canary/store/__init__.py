"""Storage: SQLAlchemy models, Alembic migrations, the repository and the leader lease."""

from __future__ import annotations

from canary.store._audit_rows import AuditRows
from canary.store.repository import Store
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
