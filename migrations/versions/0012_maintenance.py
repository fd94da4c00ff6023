"""Maintenance windows: an operator says that an endpoint (or every endpoint of a provider slug)
is under planned maintenance until a time; it is still probed, but its results decide nothing
until then.

Revision ID: 0012_maintenance
Revises: 0012_notifier_targets
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_maintenance"
down_revision: str | None = "0012_notifier_targets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "maintenance",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("removed_by", sa.String(length=200), nullable=True),
        sa.Column("remove_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance")),
    )
    op.create_index(op.f("ix_maintenance_model_removed_at"), "maintenance", ["model", "removed_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_maintenance_model_removed_at"), table_name="maintenance")
    op.drop_table("maintenance")
