"""When canary received each report (``reports.received_at``), apart from the time the app says it
saw the answer (``at``, which the app may set): the rate limits and the focused checks' pickup
count reports by when they came, so a report dated back counts like any other. Rows stored before
take their ``at``.

Revision ID: 0016_report_received_at
Revises: 0015_reports
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_report_received_at"
down_revision: str | None = "0015_reports"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("reports") as batch:
        batch.add_column(sa.Column("received_at", WHEN, nullable=True))
    reports = sa.table("reports", sa.column("at", WHEN), sa.column("received_at", WHEN))
    op.execute(reports.update().values(received_at=reports.c.at))
    with op.batch_alter_table("reports") as batch:
        batch.alter_column("received_at", existing_type=WHEN, nullable=False)
    for columns in (
        ["model", "received_at"],
        ["outcome", "received_at"],
        ["sender", "received_at"],
    ):
        op.create_index(op.f(f"ix_reports_{'_'.join(columns)}"), "reports", columns)


def downgrade() -> None:
    for columns in (
        ["model", "received_at"],
        ["outcome", "received_at"],
        ["sender", "received_at"],
    ):
        op.drop_index(op.f(f"ix_reports_{'_'.join(columns)}"), "reports")
    with op.batch_alter_table("reports") as batch:
        batch.drop_column("received_at")
