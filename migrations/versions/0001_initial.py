"""Initial schema: rounds, evidence, endpoint state, quarantines, exclusions, audit/outbox,
snapshots, drift events and leases.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "endpoint_state",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("failing_streak", sa.Integer(), nullable=False),
        sa.Column("passing_streak", sa.Integer(), nullable=False),
        sa.Column("quarantined_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("quarantined_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ladder_step", sa.Integer(), nullable=False),
        sa.Column("last_quarantine_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_language", sa.String(length=16), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model", "tag", name=op.f("pk_endpoint_state")),
    )
    op.create_table(
        "exclusions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("removed_by", sa.String(length=200), nullable=True),
        sa.Column("remove_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exclusions")),
    )
    op.create_index(
        op.f("ix_exclusions_model_removed_at"), "exclusions", ["model", "removed_at"], unique=False
    )
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "rounds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("policy_version", sa.String(length=200), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("checksums", sa.JSON(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("skipped", sa.JSON(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rounds")),
        sa.UniqueConstraint("model", "scheduled_at", name=op.f("uq_rounds_model_scheduled_at")),
    )
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("tag", sa.String(length=200), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("policy_version", sa.String(length=200), nullable=True),
        sa.Column("round_id", sa.Integer(), nullable=True),
        sa.Column("notified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("notify_attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], name=op.f("fk_audit_round_id_rounds")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit")),
    )
    op.create_index(op.f("ix_audit_model_at"), "audit", ["model", "at"], unique=False)
    op.create_index(
        op.f("ix_audit_notified_at_next_attempt_at"),
        "audit",
        ["notified_at", "next_attempt_at"],
        unique=False,
    )
    op.create_table(
        "contract_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("contract", sa.String(length=32), nullable=False),
        sa.Column("result", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("figure", sa.Float(), nullable=True),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("sample", sa.Text(), nullable=False),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column("language_anomaly", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_contract_results_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contract_results")),
    )
    op.create_index(
        op.f("ix_contract_results_model_tag"), "contract_results", ["model", "tag"], unique=False
    )
    op.create_index(
        op.f("ix_contract_results_round_id_model_tag"),
        "contract_results",
        ["round_id", "model", "tag"],
        unique=False,
    )
    op.create_table(
        "drift_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("field", sa.String(length=64), nullable=False),
        sa.Column("old", sa.JSON(), nullable=True),
        sa.Column("new", sa.JSON(), nullable=True),
        sa.Column("alert", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_drift_events_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drift_events")),
    )
    op.create_index(op.f("ix_drift_events_model_at"), "drift_events", ["model", "at"], unique=False)
    op.create_table(
        "endpoint_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_endpoint_snapshots_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_endpoint_snapshots")),
    )
    op.create_index(
        op.f("ix_endpoint_snapshots_model_at"), "endpoint_snapshots", ["model", "at"], unique=False
    )
    op.create_table(
        "probes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("contract", sa.String(length=32), nullable=False),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("transport", sa.String(length=32), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("served_by", sa.String(length=200), nullable=True),
        sa.Column("attribution_ok", sa.Boolean(), nullable=False),
        sa.Column("ttft_s", sa.Float(), nullable=True),
        sa.Column("reasoning_s", sa.Float(), nullable=True),
        sa.Column("total_s", sa.Float(), nullable=True),
        sa.Column("finish_reason", sa.String(length=64), nullable=True),
        sa.Column("native_finish_reason", sa.String(length=64), nullable=True),
        sa.Column("sample", sa.Text(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("checksum", sa.String(length=128), nullable=False),
        sa.Column("nonce", sa.String(length=128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_probes_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_probes")),
    )
    op.create_index(op.f("ix_probes_model_tag_at"), "probes", ["model", "tag", "at"], unique=False)
    op.create_index(op.f("ix_probes_round_id"), "probes", ["round_id"], unique=False)
    op.create_table(
        "quarantines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("release_why", sa.String(length=32), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("policy_version", sa.String(length=200), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_quarantines_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quarantines")),
    )
    op.create_index(
        op.f("ix_quarantines_model_tag_released_at"),
        "quarantines",
        ["model", "tag", "released_at"],
        unique=False,
    )
    op.create_table(
        "round_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=False),
        sa.Column("language_anomaly_in", sa.String(length=16), nullable=True),
        sa.ForeignKeyConstraint(
            ["round_id"], ["rounds.id"], name=op.f("fk_round_verdicts_round_id_rounds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_round_verdicts")),
        sa.UniqueConstraint(
            "round_id", "model", "tag", name=op.f("uq_round_verdicts_round_id_model_tag")
        ),
    )
    op.create_index(
        op.f("ix_round_verdicts_model_tag"), "round_verdicts", ["model", "tag"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_round_verdicts_model_tag"), table_name="round_verdicts")
    op.drop_table("round_verdicts")
    op.drop_index(op.f("ix_quarantines_model_tag_released_at"), table_name="quarantines")
    op.drop_table("quarantines")
    op.drop_index(op.f("ix_probes_round_id"), table_name="probes")
    op.drop_index(op.f("ix_probes_model_tag_at"), table_name="probes")
    op.drop_table("probes")
    op.drop_index(op.f("ix_endpoint_snapshots_model_at"), table_name="endpoint_snapshots")
    op.drop_table("endpoint_snapshots")
    op.drop_index(op.f("ix_drift_events_model_at"), table_name="drift_events")
    op.drop_table("drift_events")
    op.drop_index(op.f("ix_contract_results_round_id_model_tag"), table_name="contract_results")
    op.drop_index(op.f("ix_contract_results_model_tag"), table_name="contract_results")
    op.drop_table("contract_results")
    op.drop_index(op.f("ix_audit_notified_at_next_attempt_at"), table_name="audit")
    op.drop_index(op.f("ix_audit_model_at"), table_name="audit")
    op.drop_table("audit")
    op.drop_table("rounds")
    op.drop_table("leases")
    op.drop_index(op.f("ix_exclusions_model_removed_at"), table_name="exclusions")
    op.drop_table("exclusions")
    op.drop_table("endpoint_state")
