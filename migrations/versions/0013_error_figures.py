"""Each endpoint's probes and failed probes (5xx, timeouts, disconnects) over the 24 h before its
model's latest finished round, kept beside the latency figures: a task profile's error rate is
read as one row per endpoint instead of a day of probes.

Filled as of each model's latest finished round, as 0009 filled the latency figures.

Revision ID: 0013
Revises: 0012_maintenance
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012_maintenance"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "error_figures",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("probes", sa.Integer(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("model", "tag", name=op.f("pk_error_figures")),
    )
    from canary.store.latency import outside_maintenance, refresh_error_figures
    from canary.store.tables import UTCDateTime

    rounds = sa.table(
        "rounds",
        sa.column("model", sa.String()),
        sa.column("status", sa.String()),
        sa.column("finished_at", UTCDateTime()),
    )
    c = rounds.c
    bind = op.get_bind()
    latest = bind.execute(
        sa.select(c.model, sa.func.max(c.finished_at))
        .where(c.status == "finished", c.finished_at.is_not(None))
        .group_by(c.model)
    )
    for model, finished_at in latest.all():
        refresh_error_figures(
            bind, model, finished_at, outside_maintenance(bind, model, finished_at)
        )


def downgrade() -> None:
    op.drop_table("error_figures")
