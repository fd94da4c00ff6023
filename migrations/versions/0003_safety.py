"""Safety invariants: per-contract failing counts, quarantine causes, the floor on the published
list (withheld quarantines, floor episodes) and a per-model guard row.

Existing quarantines migrate with the causes ``["all"]`` (every applicable contract must pass to
release them early, as before). A failing count recorded before this revision cannot be told
apart by contract, so it restarts: a defect must reproduce, contract by contract, before a
quarantine (a safe default: it can delay a quarantine by a round, never cause one). A pending
language keeps its language, pending since the state's last update.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("endpoint_state") as batch:
        batch.alter_column("passing_streak", new_column_name="recovery_streak")
        batch.alter_column("evidence", new_column_name="recovery_evidence")
        batch.add_column(sa.Column("streaks", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("causes", sa.JSON(), nullable=True))
        batch.add_column(
            sa.Column("next_language_since", sa.DateTime(timezone=True), nullable=True)
        )
    state = sa.table(
        "endpoint_state",
        sa.column("streaks", sa.JSON()),
        sa.column("causes", sa.JSON()),
        sa.column("failing_streak", sa.Integer()),
        sa.column("quarantined_until", sa.DateTime(timezone=True)),
        sa.column("next_language", sa.String()),
        sa.column("next_language_since", sa.DateTime(timezone=True)),
        sa.column("updated_at", sa.DateTime(timezone=True)),
        sa.column("recovery_streak", sa.Integer()),
        sa.column("recovery_evidence", sa.JSON()),
    )
    op.execute(state.update().values(streaks=[], causes=[], failing_streak=0))
    # the old `evidence` held a failing streak's rounds unless the endpoint was passing while
    # quarantined: only the latter is recovery evidence
    op.execute(
        state.update()
        .where(sa.or_(state.c.quarantined_until.is_(None), state.c.recovery_streak == 0))
        .values(recovery_streak=0, recovery_evidence=[])
    )
    op.execute(state.update().where(state.c.quarantined_until.is_not(None)).values(causes=["all"]))
    op.execute(
        state.update()
        .where(state.c.next_language.is_not(None))
        .values(next_language_since=state.c.updated_at)
    )
    with op.batch_alter_table("endpoint_state") as batch:
        batch.alter_column("streaks", existing_type=sa.JSON(), nullable=False)
        batch.alter_column("causes", existing_type=sa.JSON(), nullable=False)

    with op.batch_alter_table("quarantines") as batch:
        batch.add_column(sa.Column("causes", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("withheld_at", sa.DateTime(timezone=True), nullable=True))
    quarantines = sa.table("quarantines", sa.column("causes", sa.JSON()))
    op.execute(quarantines.update().values(causes=["all"]))
    with op.batch_alter_table("quarantines") as batch:
        batch.alter_column("causes", existing_type=sa.JSON(), nullable=False)

    op.create_table(
        "floor_episodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("open_model", sa.String(length=200), nullable=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("opened_by", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_floor_episodes")),
        sa.UniqueConstraint("open_model", name=op.f("uq_floor_episodes_open_model")),
    )
    op.create_index(
        op.f("ix_floor_episodes_model_opened_at"), "floor_episodes", ["model", "opened_at"]
    )
    op.create_table(
        "model_guards",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("model", name=op.f("pk_model_guards")),
    )


def downgrade() -> None:
    op.drop_table("model_guards")
    op.drop_index(op.f("ix_floor_episodes_model_opened_at"), table_name="floor_episodes")
    op.drop_table("floor_episodes")
    with op.batch_alter_table("quarantines") as batch:
        batch.drop_column("withheld_at")
        batch.drop_column("causes")
    with op.batch_alter_table("endpoint_state") as batch:
        batch.drop_column("next_language_since")
        batch.drop_column("causes")
        batch.drop_column("streaks")
        batch.alter_column("recovery_evidence", new_column_name="evidence")
        batch.alter_column("recovery_streak", new_column_name="passing_streak")
