"""SQLAlchemy 2 models: the state that must survive a crash. ``migrations/`` matches them.

Every datetime column is :class:`UTCDateTime`: it accepts aware datetimes only and always returns
aware UTC datetimes, on SQLite as on PostgreSQL. No column holds a secret.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out. SQLite keeps naive UTC text (it sorts)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"naive datetime {value.isoformat()} given to the store: pass an aware one"
            )
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
        float: Float(),
        bool: Boolean(),
        str: String(200),
    }


def _round_fk(nullable: bool = False) -> Any:
    return mapped_column(ForeignKey("rounds.id"), nullable=nullable)


class Round(Base):
    __tablename__ = "rounds"
    __table_args__ = (UniqueConstraint("model", "scheduled_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str]
    scheduled_at: Mapped[datetime]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16))  # running | finished | abandoned
    policy_version: Mapped[str]
    runner_id: Mapped[str]
    checksums: Mapped[dict[str, Any]]
    cost_usd: Mapped[float | None]
    skipped: Mapped[list[Any]]
    detail: Mapped[dict[str, Any]]


class Probe(Base):
    __tablename__ = "probes"
    __table_args__ = (Index(None, "model", "tag", "at"), Index(None, "round_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = _round_fk()
    model: Mapped[str]
    tag: Mapped[str]
    contract: Mapped[str] = mapped_column(String(32))
    language: Mapped[str | None] = mapped_column(String(16))
    attempt: Mapped[int]
    transport: Mapped[str] = mapped_column(String(32))
    status: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(Text)
    served_by: Mapped[str | None]
    attribution_ok: Mapped[bool]
    ttft_s: Mapped[float | None]
    reasoning_s: Mapped[float | None]
    total_s: Mapped[float | None]
    finish_reason: Mapped[str | None] = mapped_column(String(64))
    native_finish_reason: Mapped[str | None] = mapped_column(String(64))
    sample: Mapped[str] = mapped_column(Text)  # at most 200 characters of the answer
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    cost_usd: Mapped[float | None]
    checksum: Mapped[str] = mapped_column(String(128))
    nonce: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime]


class ContractResultRecord(Base):
    __tablename__ = "contract_results"
    __table_args__ = (Index(None, "round_id", "model", "tag"), Index(None, "model", "tag"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = _round_fk()
    model: Mapped[str]
    tag: Mapped[str]
    contract: Mapped[str] = mapped_column(String(32))
    result: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text)
    figure: Mapped[float | None]
    reason: Mapped[str | None] = mapped_column(String(64))
    sample: Mapped[str] = mapped_column(Text)
    language: Mapped[str | None] = mapped_column(String(16))
    language_anomaly: Mapped[bool]


class RoundVerdictRecord(Base):
    __tablename__ = "round_verdicts"
    __table_args__ = (UniqueConstraint("round_id", "model", "tag"), Index(None, "model", "tag"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = _round_fk()
    model: Mapped[str]
    tag: Mapped[str]
    verdict: Mapped[str] = mapped_column(String(32))
    language_anomaly_in: Mapped[str | None] = mapped_column(String(16))


class EndpointStateRecord(Base):
    __tablename__ = "endpoint_state"

    model: Mapped[str] = mapped_column(primary_key=True)
    tag: Mapped[str] = mapped_column(primary_key=True)
    failing_streak: Mapped[int]
    passing_streak: Mapped[int]
    quarantined_since: Mapped[datetime | None]
    quarantined_until: Mapped[datetime | None]
    ladder_step: Mapped[int]
    last_quarantine_at: Mapped[datetime | None]
    next_language: Mapped[str | None] = mapped_column(String(16))
    evidence: Mapped[list[Any]]
    version: Mapped[int]
    updated_at: Mapped[datetime]


class QuarantineRecord(Base):
    __tablename__ = "quarantines"
    __table_args__ = (Index(None, "model", "tag", "released_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str]
    tag: Mapped[str]
    started_at: Mapped[datetime]
    until: Mapped[datetime]
    released_at: Mapped[datetime | None]
    release_why: Mapped[str | None] = mapped_column(String(32))
    step: Mapped[int]
    reason: Mapped[str] = mapped_column(Text)
    evidence: Mapped[list[Any]]
    policy_version: Mapped[str]
    round_id: Mapped[int | None] = _round_fk(nullable=True)


class ExclusionRecord(Base):
    __tablename__ = "exclusions"
    __table_args__ = (Index(None, "model", "removed_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str]
    tag: Mapped[str]
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str]
    created_at: Mapped[datetime]
    until: Mapped[datetime | None]
    removed_at: Mapped[datetime | None]
    removed_by: Mapped[str | None]
    remove_reason: Mapped[str | None] = mapped_column(Text)


class AuditRecord(Base):
    """The audit log and the notification outbox in one: one row per decision."""

    __tablename__ = "audit"
    __table_args__ = (Index(None, "model", "at"), Index(None, "notified_at", "next_attempt_at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime]
    actor: Mapped[str]
    event: Mapped[str] = mapped_column(String(32))
    model: Mapped[str | None]
    tag: Mapped[str | None]
    detail: Mapped[dict[str, Any]]
    evidence: Mapped[list[Any]]
    policy_version: Mapped[str | None]
    round_id: Mapped[int | None] = _round_fk(nullable=True)
    notified_at: Mapped[datetime | None]
    notify_attempts: Mapped[int]
    next_attempt_at: Mapped[datetime | None]


class EndpointSnapshot(Base):
    __tablename__ = "endpoint_snapshots"
    __table_args__ = (Index(None, "model", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int | None] = _round_fk(nullable=True)
    model: Mapped[str]
    tag: Mapped[str]
    at: Mapped[datetime]
    meta: Mapped[dict[str, Any]]


class DriftEvent(Base):
    __tablename__ = "drift_events"
    __table_args__ = (Index(None, "model", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int | None] = _round_fk(nullable=True)
    model: Mapped[str]
    tag: Mapped[str | None]  # None for model-wide changes (capacity)
    at: Mapped[datetime]
    field: Mapped[str] = mapped_column(String(64))
    old: Mapped[Any] = mapped_column(JSON, nullable=True)
    new: Mapped[Any] = mapped_column(JSON, nullable=True)
    alert: Mapped[bool]
    reason: Mapped[str | None]


class Lease(Base):
    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    holder: Mapped[str]
    acquired_at: Mapped[datetime]
    expires_at: Mapped[datetime]


rounds = cast(Table, Round.__table__)
probes = cast(Table, Probe.__table__)
contract_results = cast(Table, ContractResultRecord.__table__)
round_verdicts = cast(Table, RoundVerdictRecord.__table__)
endpoint_state = cast(Table, EndpointStateRecord.__table__)
quarantines = cast(Table, QuarantineRecord.__table__)
exclusions = cast(Table, ExclusionRecord.__table__)
audit = cast(Table, AuditRecord.__table__)
endpoint_snapshots = cast(Table, EndpointSnapshot.__table__)
drift_events = cast(Table, DriftEvent.__table__)
leases = cast(Table, Lease.__table__)
