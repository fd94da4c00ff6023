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

# Imported on first use, each from its module: the repository (SQLAlchemy) and the rows that a
# read command never builds (see log_rows).
_LAZY = {
    "Store": "repository",
    "AuditRows": "_audit_rows",
    **dict.fromkeys(
        (
            "AuditRow",
            "DriftChange",
            "DriftRow",
            "ExclusionRow",
            "HistoryRow",
            "LeaseRow",
            "ProbeRow",
        ),
        "log_rows",
    ),
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
    if name not in _LAZY:
        raise AttributeError(f"module 'canary.store' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"canary.store.{_LAZY[name]}"), name)
