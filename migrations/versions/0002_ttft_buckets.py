"""Latency histograms: time to first token per endpoint, hour and 2 % bucket; indexes that
let the operator reads (status, the providers call, the page) come from indexes alone.

The histograms are filled from the probes already stored (the last 8 days), so the figures read
the same after the upgrade as before it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ttft_buckets",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("top", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("model", "tag", "hour", "bucket", name=op.f("pk_ttft_buckets")),
    )
    op.create_index(
        op.f("ix_ttft_buckets_model_hour_tag_bucket_n_top"),
        "ttft_buckets",
        ["model", "hour", "tag", "bucket", "n", "top"],
        unique=False,
    )
    op.drop_index(op.f("ix_round_verdicts_model_tag"), table_name="round_verdicts")
    op.create_index(
        op.f("ix_round_verdicts_model_tag_round_id"),
        "round_verdicts",
        ["model", "tag", "round_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_endpoint_snapshots_model_tag"),
        "endpoint_snapshots",
        ["model", "tag"],
        unique=False,
    )
    _backfill()


def _backfill() -> None:
    # The columns as this revision knows them (not canary.store.tables: later revisions change it).
    from canary.store.latency import bucket_rows
    from canary.store.tables import UTCDateTime

    probes = sa.table(
        "probes",
        sa.column("model", sa.String()),
        sa.column("tag", sa.String()),
        sa.column("at", UTCDateTime()),
        sa.column("ttft_s", sa.Float()),
        sa.column("attribution_ok", sa.Boolean()),
    )
    buckets = sa.table(
        "ttft_buckets",
        sa.column("model", sa.String()),
        sa.column("tag", sa.String()),
        sa.column("hour", UTCDateTime()),
        sa.column("bucket", sa.Integer()),
        sa.column("n", sa.Integer()),
        sa.column("top", sa.Float()),
    )
    since = datetime.now(UTC) - timedelta(days=8)
    c = probes.c
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(c.model, c.tag, c.at, c.ttft_s).where(
            c.at >= since, c.ttft_s.is_not(None), c.attribution_ok.is_(True)
        )
    )
    values = bucket_rows((r.model, r.tag, r.at, r.ttft_s) for r in rows)
    if values:
        bind.execute(sa.insert(buckets), values)


def downgrade() -> None:
    op.drop_index(op.f("ix_endpoint_snapshots_model_tag"), table_name="endpoint_snapshots")
    op.drop_index(op.f("ix_round_verdicts_model_tag_round_id"), table_name="round_verdicts")
    op.create_index(
        op.f("ix_round_verdicts_model_tag"), "round_verdicts", ["model", "tag"], unique=False
    )
    op.drop_index(op.f("ix_ttft_buckets_model_hour_tag_bucket_n_top"), table_name="ttft_buckets")
    op.drop_table("ttft_buckets")
