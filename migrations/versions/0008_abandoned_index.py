"""A partial index of the abandoned rounds: the reads that leave an abandoned attempt out (each
endpoint's latest judged round above all) look it up there instead of scanning every round.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ABANDONED = sa.text("status = 'abandoned'")


def upgrade() -> None:
    op.create_index(
        "ix_rounds_abandoned",
        "rounds",
        ["id"],
        sqlite_where=ABANDONED,
        postgresql_where=ABANDONED,
    )


def downgrade() -> None:
    op.drop_index("ix_rounds_abandoned", table_name="rounds")
