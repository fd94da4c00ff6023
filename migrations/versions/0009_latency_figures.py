"""Latency figures per endpoint and window, kept as of each model's latest finished round: the
operator reads (status, the providers call, the page, /metrics) read two rows per endpoint
instead of a week of histogram buckets (about 2,000 rows per endpoint when times vary as real
hosts' do). And indexes of the rounds (kept for good) by model and slot, by slot, and by start:
without them the walk over the models that ever ran a round read the whole table once a model
(a second per status at 200 models), and the latest rounds and the day's spend read every
round ever run.

Filled from the histograms as of each model's latest finished round, so the figures read the
same after the upgrade as after that round.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "latency_figures",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("span", sa.String(length=8), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("p50", sa.Float(), nullable=True),
        sa.Column("p95", sa.Float(), nullable=True),
        sa.Column("p99", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("model", "tag", "span", name=op.f("pk_latency_figures")),
    )
    op.create_index(
        "ix_rounds_model_scheduled_at", "rounds", ["model", "scheduled_at"], unique=False
    )
    op.create_index("ix_rounds_scheduled_at_id", "rounds", ["scheduled_at", "id"], unique=False)
    op.create_index("ix_rounds_started_at", "rounds", ["started_at"], unique=False)
    _backfill()


def _backfill() -> None:
    # The columns as this revision knows them (not canary.store.tables: later revisions change it).
    from canary.store.latency import refresh_latency_figures
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
        refresh_latency_figures(bind, model, finished_at)


def downgrade() -> None:
    op.drop_index("ix_rounds_started_at", table_name="rounds")
    op.drop_index("ix_rounds_scheduled_at_id", table_name="rounds")
    op.drop_index("ix_rounds_model_scheduled_at", table_name="rounds")
    op.drop_table("latency_figures")
