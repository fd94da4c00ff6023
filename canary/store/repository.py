"""The repository: one ``Store`` over SQLite or PostgreSQL, SQLAlchemy Core, sync 2.0 style.

Its parts live beside it, each named for what it holds (``_claims``, ``_rounds``,
``_endpoint_state``, ``_layers``, ``_snapshots``, ``_audit``, ``_operator_reads``,
``_retention``, ``_metrics_reads``, ``_equality``, ``_reports``); every read returns plain
frozen dataclasses from :mod:`canary.store.rows` or :mod:`canary.core.model`.
"""

from __future__ import annotations

from sqlalchemy import literal, select
from sqlalchemy.exc import SQLAlchemyError

from canary.store._audit import AuditMixin
from canary.store._claims import ClaimsMixin
from canary.store._endpoint_state import EndpointStateMixin
from canary.store._equality import EqualityMixin
from canary.store._layers import LayersMixin
from canary.store._metrics_reads import MetricsReadsMixin
from canary.store._operator_reads import OperatorReadsMixin
from canary.store._reports import ReportsMixin
from canary.store._retention import RetentionMixin
from canary.store._rounds import RoundsMixin
from canary.store._snapshots import SnapshotsMixin


class Store(
    ClaimsMixin,
    RoundsMixin,
    EndpointStateMixin,
    LayersMixin,
    SnapshotsMixin,
    RetentionMixin,
    AuditMixin,
    OperatorReadsMixin,
    MetricsReadsMixin,
    EqualityMixin,
    ReportsMixin,
):
    """``Store(url)``: ``sqlite:///path`` or ``postgresql+psycopg://...``; ``upgrade()`` first."""

    def upgrade(self) -> str | None:
        """Bring the schema to head (Alembic); safe when two processes do it at once."""
        from canary.store import migrate  # alembic is heavy: only when migrating

        return migrate.upgrade(self.engine)

    def current_revision(self) -> str | None:
        from canary.store import migrate

        return migrate.current_revision(self.engine)

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(select(literal(1)))
        except SQLAlchemyError:
            return False
        return True

    def dispose(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()
