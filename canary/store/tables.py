"""SQLAlchemy Core tables: the state that must survive a crash. ``migrations/`` matches them.

Plain Core (``Table``/``Column``), no ORM: importing the store stays cheap.
Every datetime column is :class:`UTCDateTime`: it accepts aware datetimes only and always returns
aware UTC datetimes, on SQLite as on PostgreSQL. No column holds a secret.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

from pydantic import JsonValue
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
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
    false,
)
from sqlalchemy import text as sql_text
from sqlalchemy.types import TypeDecorator, TypeEngine

T = TypeVar("T")

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def stored_utc(value: datetime) -> datetime:
    """An aware time as the store keeps it (UTC); a naive one is refused, whatever writes it."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"naive datetime {value.isoformat()} given to the store: pass an aware one"
        )
    return value.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out. SQLite keeps naive UTC text (it sorts)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = stored_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


metadata = MetaData(naming_convention=NAMING)


def _col(name: str, type_: TypeEngine[T], *, null: bool = False) -> Column[T]:
    return Column(name, type_, nullable=null)


def _id() -> Column[int]:
    return Column("id", Integer, primary_key=True)


def _str(name: str, length: int = 200, *, null: bool = False) -> Column[str]:
    return _col(name, String(length), null=null)


def _text(name: str, *, null: bool = False) -> Column[str]:
    return _col(name, Text(), null=null)


def _int(name: str, *, null: bool = False) -> Column[int]:
    return _col(name, Integer(), null=null)


def _float(name: str, *, null: bool = False) -> Column[float]:
    return _col(name, Float(), null=null)


def _bool(name: str) -> Column[bool]:
    return _col(name, Boolean())


def _when(name: str, *, null: bool = False) -> Column[datetime]:
    return _col(name, UTCDateTime(), null=null)


def _json(name: str, *, null: bool = False) -> Column[JsonValue]:
    return _col(name, JSON(), null=null)


def _round_fk(*, null: bool = False) -> Column[int]:
    return Column("round_id", Integer, ForeignKey("rounds.id"), nullable=null)


# A live round (not abandoned): the predicate of the partial unique index below, which a claim's
# ON CONFLICT names to find it.
LIVE = sql_text("status != 'abandoned'")

rounds = Table(
    "rounds",
    metadata,
    _id(),
    _str("model"),
    _when("scheduled_at"),
    _when("started_at"),
    _when("finished_at", null=True),
    _str("status", 16),  # running | finished | abandoned
    _str("policy_version"),
    _str("runner_id"),
    _json("checksums"),
    _float("cost_usd", null=True),
    _json("skipped"),
    _json("detail"),
    _when("heartbeat_at", null=True),  # the claimer's last sign of life (replicas share a slot)
    # One live attempt per (model, slot); an attempt whose claimer died is marked abandoned and
    # another replica claims the slot again with a row of its own.
    Index(
        "uq_rounds_model_scheduled_at_live",
        "model",
        "scheduled_at",
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    ),
    # Every attempt by model and slot: the models that ever ran a round, read down this index
    # one model a step, and each model's rounds in time order (the partial index above cannot
    # serve a read that does not leave abandoned attempts out).
    Index("ix_rounds_model_scheduled_at", "model", "scheduled_at"),
    # The rounds are kept for good: the latest ones overall, and those started since a time (the
    # day's spend), are read from an index, not from every round ever run.
    Index("ix_rounds_scheduled_at_id", "scheduled_at", "id"),
    Index("ix_rounds_started_at", "started_at"),
    # The few abandoned attempts, so reads that leave them out check an index, not the table.
    Index(
        "ix_rounds_abandoned",
        "id",
        sqlite_where=sql_text("status = 'abandoned'"),
        postgresql_where=sql_text("status = 'abandoned'"),
    ),
)

probes = Table(
    "probes",
    metadata,
    _id(),
    _round_fk(),
    _str("model"),
    _str("tag"),
    _str("contract", 32),
    _str("language", 16, null=True),
    _int("attempt"),
    _str("transport", 32),
    _int("status", null=True),
    _text("error", null=True),
    _str("served_by", null=True),
    _bool("attribution_ok"),
    _float("ttft_s", null=True),
    # a stall: the stream opened but sent no token in time; ttft_s holds the timeout (a bound)
    Column("ttft_censored", Boolean(), nullable=False, server_default=false()),
    _float("reasoning_s", null=True),
    _float("total_s", null=True),
    _str("finish_reason", 64, null=True),
    _str("native_finish_reason", 64, null=True),
    _text("sample"),  # at most 200 characters of the answer
    _int("prompt_tokens", null=True),
    _int("completion_tokens", null=True),
    _float("cost_usd", null=True),
    _str("checksum", 128),
    _str("nonce", 128),
    _when("at"),
    Index(None, "model", "tag", "at"),
    Index(None, "round_id"),
)

# Time to first token per endpoint and hour as a histogram (canary.core.stats): the latency
# figures read a few rows per endpoint instead of every probe. A round's probes are counted in
# the transaction that finishes it, so an abandoned attempt's never are.
ttft_buckets = Table(
    "ttft_buckets",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("tag", String(200), primary_key=True),
    Column("hour", UTCDateTime(), primary_key=True),
    Column("bucket", Integer(), primary_key=True),
    _int("n"),
    _float("top"),  # the largest sample in the bucket (what a percentile landing there reports)
    # covering: the windows' figures are read from the index alone
    Index(None, "model", "hour", "tag", "bucket", "n", "top"),
)

# Each endpoint's latency figures over the 24 h and 7 d windows (a row per window, ``span``), as
# of the end of its model's latest finished round (``at``): computed from ``ttft_buckets`` in the
# transaction that finishes the round, so operators read two rows per endpoint instead of every
# bucket of a week. Between rounds no sample arrives, so the figures stand until the next one.
latency_figures = Table(
    "latency_figures",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("tag", String(200), primary_key=True),
    Column("span", String(8), primary_key=True),  # 24h | 7d
    _when("at"),
    _int("n"),
    _float("p50", null=True),
    _float("p95", null=True),
    _float("p99", null=True),
)

# Each endpoint's probes over the 24 h before its model's latest finished round (``at``): those
# that reached a verdict on the wire and those of them that ended in a 5xx, a timeout or a
# disconnect (a task profile's ``max_error_rate``). Recomputed with ``latency_figures``.
error_figures = Table(
    "error_figures",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("tag", String(200), primary_key=True),
    _when("at"),
    _int("probes"),
    _int("errors"),
)

contract_results = Table(
    "contract_results",
    metadata,
    _id(),
    _round_fk(),
    _str("model"),
    _str("tag"),
    _str("contract", 32),
    _str("result", 32),
    _text("detail"),
    _float("figure", null=True),
    _str("reason", 64, null=True),
    _text("sample"),
    _str("language", 16, null=True),
    _bool("language_anomaly"),
    Index(None, "round_id", "model", "tag"),
    Index(None, "model", "tag"),
)

round_verdicts = Table(
    "round_verdicts",
    metadata,
    _id(),
    _round_fk(),
    _str("model"),
    _str("tag"),
    _str("verdict", 32),
    _str("language_anomaly_in", 16, null=True),
    _str("served_model", null=True),  # the model most of the endpoint's answers reported
    UniqueConstraint("round_id", "model", "tag"),
    Index(None, "model", "tag", "round_id"),  # each endpoint's latest verdict, from the index
)

# Each endpoint's largest round_id in round_verdicts, raised with every verdict written: reading
# every endpoint's latest results starts from these rows instead of one walk of round_verdicts'
# index per endpoint. The reader checks each round (abandoned? pruned?) and walks the index only
# for a model where one fails (see canary.store.latest_verdicts).
latest_verdicts = Table(
    "latest_verdicts",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("tag", String(200), primary_key=True),
    _int("round_id"),
)

endpoint_state = Table(
    "endpoint_state",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("tag", String(200), primary_key=True),
    _int("failing_streak"),  # the longest of the per-contract counts in `streaks` (for reads)
    _json("streaks"),  # [{contract, count, last_fail_at, evidence, warned}]
    _int("recovery_streak"),
    _json("recovery_evidence"),
    _when("quarantined_since", null=True),
    _when("quarantined_until", null=True),
    _json("causes"),
    _int("ladder_step"),
    _when("last_quarantine_at", null=True),
    _str("next_language", 16, null=True),
    _when("next_language_since", null=True),
    _int("version"),
    _when("updated_at"),
    # the slot of the round whose decision last wrote this state: one slot never counts twice
    _when("counted_slot", null=True),
)

quarantines = Table(
    "quarantines",
    metadata,
    _id(),
    _str("model"),
    _str("tag"),
    _when("started_at"),
    _when("until"),
    _when("released_at", null=True),
    _str("release_why", 32, null=True),
    _int("step"),
    _text("reason"),
    _json("evidence"),
    _json("causes"),  # the contracts that caused it; ["all"] for those from before causes
    _str("policy_version"),
    _round_fk(null=True),
    _when("withheld_at", null=True),  # held back from the published list by the capacity floor
    Index(None, "model", "tag", "released_at"),
)

# One row per floor episode: opened when a model's usable endpoints fall below its capacity floor
# on the published list, closed when they reach it again. `open_model` is the model while the
# episode is open and NULL after: its unique constraint keeps one open episode per model, so
# replicas that see the same breach record it once.
floor_episodes = Table(
    "floor_episodes",
    metadata,
    _id(),
    _str("model"),
    _str("open_model", null=True),
    _when("opened_at"),
    _when("closed_at", null=True),
    _str("opened_by"),
    _json("detail"),
    UniqueConstraint("open_model"),
    Index(None, "model", "opened_at"),
)

# Serialises what changes a model's published list (a round's decision, an operator's exclusion,
# a manual release): each takes the model's row first and bumps its version.
model_guards = Table(
    "model_guards",
    metadata,
    Column("model", String(200), primary_key=True),
    _int("version"),
)


def _operator_entries(name: str, *, open_ended: bool) -> Table:
    """An operator's entries by tag or provider slug: who added and removed each, and why."""
    return Table(
        name,
        metadata,
        _id(),
        _str("model"),
        _str("tag"),
        _text("reason"),
        _str("actor"),
        _when("created_at"),
        _when("until", null=open_ended),
        _when("removed_at", null=True),
        _str("removed_by", null=True),
        _text("remove_reason", null=True),
        Index(None, "model", "removed_at"),
    )


# The runtime layer of the ignore list.
exclusions = _operator_entries("exclusions", open_ended=True)
# Planned maintenance windows: the endpoints one names are probed, but their results decide
# nothing until ``until`` (canary.core.quarantine).
maintenance = _operator_entries("maintenance", open_ended=False)

# The audit log and the notification outbox in one: one row per decision.
audit = Table(
    "audit",
    metadata,
    _id(),
    _when("at"),
    _str("actor"),
    _str("event", 32),
    _str("model", null=True),
    _str("tag", null=True),
    _json("detail"),
    _json("evidence"),
    _str("policy_version", null=True),
    _round_fk(null=True),
    _when("notified_at", null=True),
    _int("notify_attempts"),
    _when("next_attempt_at", null=True),
    # the labels of the targets that accepted the row (never a URL): a retry skips them
    _json("delivered_to", null=True),
    Index(None, "model", "at"),
    Index(None, "notified_at", "next_attempt_at"),
)

endpoint_snapshots = Table(
    "endpoint_snapshots",
    metadata,
    _id(),
    _round_fk(null=True),
    _str("model"),
    _str("tag"),
    _when("at"),
    _json("meta"),
    Index(None, "model", "at"),
    Index(None, "model", "tag"),  # every tag ever listed, from the index
)

drift_events = Table(
    "drift_events",
    metadata,
    _id(),
    _round_fk(null=True),
    _str("model"),
    _str("tag", null=True),  # None for model-wide changes (capacity)
    _when("at"),
    _str("field", 64),
    _json("old", null=True),
    _json("new", null=True),
    _bool("alert"),
    _str("reason", null=True),
    Index(None, "model", "at"),
)

# The day's probe budget as the replicas share it: what they reserved (estimates of the rounds
# claimed, less what finished rounds did not use), and when the day's budget alert went out.
budget_days = Table(
    "budget_days",
    metadata,
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC
    _float("reserved_usd"),
    _when("alerted_at", null=True),
)

leases = Table(
    "leases",
    metadata,
    Column("name", String(200), primary_key=True),
    _str("holder"),
    _when("acquired_at"),
    _when("expires_at"),
)

# The equality check (docs/equality.md): one claimed check per (model, slot of
# ``[equality] interval_hours``), like a round, and one advisory result per tested endpoint.
equality_checks = Table(
    "equality_checks",
    metadata,
    _id(),
    _str("model"),
    _when("scheduled_at"),
    _when("started_at"),
    _when("finished_at", null=True),
    _str("status", 16),  # running | finished | skipped | abandoned
    _str("runner_id"),
    _json("settings"),  # what it ran with: the statistics' settings and the prompts' checksum
    _float("cost_usd", null=True),
    _json("detail"),
    UniqueConstraint("model", "scheduled_at"),
)

equality_results = Table(
    "equality_results",
    metadata,
    _id(),
    Column("check_id", Integer, ForeignKey("equality_checks.id"), nullable=False),
    _str("model"),
    _str("tag"),
    _when("at"),
    _str("result", 16),  # pass | fail | inconclusive
    _float("p_value", null=True),
    _float("known_p_value", null=True),
    _float("effect", null=True),
    _int("peers"),
    _int("samples"),
    _bool("pooled"),
    _text("reason"),
    _json("examples"),
    Index("ix_equality_results_model_tag_id", "model", "tag", "id"),
    Index("ix_equality_results_check_id", "check_id"),
)

# Apps' reports (canary.core.reports): one per generation id; the endpoints they name, their
# outcome, and the focused checks they started or joined. The note is shown to operators only.
reports = Table(
    "reports",
    metadata,
    _id(),
    _when("at"),  # when the app saw the answer, as it says (default: when it came)
    _when("received_at"),  # when canary took it in: what the rate limits and pickup count
    _str("model"),
    _str("provider", null=True),  # as the report named it
    _json("tags"),  # the endpoints it names (several when a name matches several)
    _str("generation_id", null=True),
    _str("symptom", 32),
    _json("contracts"),
    _str("language", 8, null=True),
    _text("note", null=True),
    _str("sender", 100),  # the report token's name
    _str("outcome", 32),
    _str("reason", null=True),
    _json("checks"),  # ids of the focused checks (rounds) it started or joined
    _when("decided_at", null=True),
    UniqueConstraint("generation_id"),
    Index(None, "model", "at"),
    Index(None, "outcome", "at"),
    Index(None, "sender", "at"),
    Index(None, "model", "received_at"),
    Index(None, "outcome", "received_at"),
    Index(None, "sender", "received_at"),
)

# One focused check per (model, contract) per min_look_gap_minutes, across replicas: the last
# claim's time, moved by compare-and-set.
focused_claims = Table(
    "focused_claims",
    metadata,
    Column("model", String(200), primary_key=True),
    Column("contract", String(32), primary_key=True),
    _when("claimed_at"),
)

# Every published document, recorded when its ETag changes: what a model's list said at T.
published_documents = Table(
    "published_documents",
    metadata,
    _id(),
    _str("model"),
    _str("variant"),  # "" for the plain list, else its needs/profile key
    _str("etag"),
    _when("at"),
    _json("body"),
    Index(None, "model", "variant", "at"),
    Index(None, "at"),
)
