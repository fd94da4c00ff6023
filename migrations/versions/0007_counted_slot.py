"""One slot counts once per endpoint: ``endpoint_state.counted_slot`` is the slot of the round
whose decision last wrote the state, and a decision of another round of that same slot is refused.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("endpoint_state") as batch:
        batch.add_column(sa.Column("counted_slot", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("endpoint_state") as batch:
        batch.drop_column("counted_slot")
