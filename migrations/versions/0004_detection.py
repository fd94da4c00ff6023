"""Probes: ``ttft_censored`` marks a stall, a stream that opened and sent no token within the
first-token timeout. Its ``ttft_s`` holds that timeout, a lower bound of the real time, and it
enters the latency histograms there.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "probes",
        sa.Column("ttft_censored", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("probes") as batch:
        batch.drop_column("ttft_censored")
