"""Deliveries recorded per target: ``audit.delivered_to`` lists the targets (signed webhooks and
Apprise notifiers, by their labels, never a URL) that accepted the row, so a retry after a
partial failure skips them, across restarts and replicas too.

Revision ID: 0012_notifier_targets
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_notifier_targets"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("audit") as batch:
        batch.add_column(sa.Column("delivered_to", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("delivered_to")
