"""Each endpoint's latest round with a verdict, kept beside the verdicts: the operator reads of
every endpoint's latest results (status, the providers call, the page) start from one row per
endpoint instead of walking round_verdicts' index twice per endpoint (a tenth of a second at
2,000 endpoints). Filled from round_verdicts as it stands.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "latest_verdicts",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("model", "tag", name=op.f("pk_latest_verdicts")),
    )
    from canary.store.latest_verdicts import fill_latest_verdicts

    fill_latest_verdicts(op.get_bind())


def downgrade() -> None:
    op.drop_table("latest_verdicts")
