"""Replicas share a round: each model's round of a slot is claimed by one replica, with a
heartbeat; a claimer that died leaves its attempt abandoned and another replica claims the slot
again (one live attempt per model and slot, a partial unique index). The day's probe budget is
reserved in the store so that replicas together never overspend it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = sa.text("status != 'abandoned'")


def upgrade() -> None:
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch.drop_constraint("uq_rounds_model_scheduled_at", type_="unique")
    op.create_index(
        "uq_rounds_model_scheduled_at_live",
        "rounds",
        ["model", "scheduled_at"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    op.create_table(
        "budget_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("alerted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("day", name=op.f("pk_budget_days")),
    )


def downgrade() -> None:
    op.drop_table("budget_days")
    op.drop_index("uq_rounds_model_scheduled_at_live", table_name="rounds")
    with op.batch_alter_table("rounds") as batch:
        batch.create_unique_constraint("uq_rounds_model_scheduled_at", ["model", "scheduled_at"])
        batch.drop_column("heartbeat_at")
