"""The equality check (docs/equality.md): ``equality_checks``, one claimed check per model and
slot with the settings it ran with, and ``equality_results``, one advisory result per tested
endpoint (pass, fail or inconclusive, p-values, effect size, example completions).

Revision ID: 0014_equality
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_equality"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "equality_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("scheduled_at", _WHEN, nullable=False),
        sa.Column("started_at", _WHEN, nullable=False),
        sa.Column("finished_at", _WHEN, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_equality_checks")),
        sa.UniqueConstraint(
            "model", "scheduled_at", name=op.f("uq_equality_checks_model_scheduled_at")
        ),
    )
    op.create_table(
        "equality_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("check_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("at", _WHEN, nullable=False),
        sa.Column("result", sa.String(length=16), nullable=False),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("known_p_value", sa.Float(), nullable=True),
        sa.Column("effect", sa.Float(), nullable=True),
        sa.Column("peers", sa.Integer(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("pooled", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("examples", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["check_id"],
            ["equality_checks.id"],
            name=op.f("fk_equality_results_check_id_equality_checks"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_equality_results")),
    )
    op.create_index("ix_equality_results_model_tag_id", "equality_results", ["model", "tag", "id"])
    op.create_index("ix_equality_results_check_id", "equality_results", ["check_id"])


def downgrade() -> None:
    op.drop_index("ix_equality_results_check_id", table_name="equality_results")
    op.drop_index("ix_equality_results_model_tag_id", table_name="equality_results")
    op.drop_table("equality_results")
    op.drop_table("equality_checks")
