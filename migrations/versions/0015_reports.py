"""Apps' reports (``reports``), the claims that keep focused checks one per (model, contract)
per look gap across replicas (``focused_claims``), and every published document as it was when
its ETag changed (``published_documents``). New tables only: nothing existing changes.

Revision ID: 0015_reports
Revises: 0014_equality
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_reports"
down_revision: str | None = "0014_equality"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _when(name: str, *, null: bool = False) -> sa.Column[sa.DateTime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=null)


def upgrade() -> None:
    op.create_table(
        "reports",
        sa.Column("id", sa.Integer(), nullable=False),
        _when("at"),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("generation_id", sa.String(length=200), nullable=True),
        sa.Column("symptom", sa.String(length=32), nullable=False),
        sa.Column("contracts", sa.JSON(), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("sender", sa.String(length=100), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.Column("checks", sa.JSON(), nullable=False),
        _when("decided_at", null=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reports")),
        sa.UniqueConstraint("generation_id", name=op.f("uq_reports_generation_id")),
    )
    op.create_index(op.f("ix_reports_model_at"), "reports", ["model", "at"])
    op.create_index(op.f("ix_reports_outcome_at"), "reports", ["outcome", "at"])
    op.create_index(op.f("ix_reports_sender_at"), "reports", ["sender", "at"])
    op.create_table(
        "focused_claims",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("contract", sa.String(length=32), nullable=False),
        _when("claimed_at"),
        sa.PrimaryKeyConstraint("model", "contract", name=op.f("pk_focused_claims")),
    )
    op.create_table(
        "published_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("variant", sa.String(length=200), nullable=False),
        sa.Column("etag", sa.String(length=200), nullable=False),
        _when("at"),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_published_documents")),
    )
    op.create_index(
        op.f("ix_published_documents_model_variant_at"),
        "published_documents",
        ["model", "variant", "at"],
    )
    op.create_index(op.f("ix_published_documents_at"), "published_documents", ["at"])


def downgrade() -> None:
    op.drop_table("published_documents")
    op.drop_table("focused_claims")
    op.drop_table("reports")
