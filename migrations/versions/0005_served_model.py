"""Model identity drift: the model each endpoint's answers reported, per round.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("round_verdicts") as batch:
        batch.add_column(sa.Column("served_model", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("round_verdicts") as batch:
        batch.drop_column("served_model")
