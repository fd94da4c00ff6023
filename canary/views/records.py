"""Plain JSON shapes of what the store hands out, shared by the API and the CLI, and the two
time helpers they share (ISO-8601 UTC out, ISO-8601 in)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, with_config
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.layers import iso_utc
from canary.core.model import Exclusion, looks_json
from canary.store.log_rows import AuditRow, HistoryRow
from canary.store.rows import QuarantineRow, RoundRow, SkippedEndpoint

iso = iso_utc  # the one ISO-8601 UTC formatter: "2026-05-01T12:00:00Z", None stays None
# The records below are the API's response bodies too: FastAPI validates and documents them, and
# an undeclared key is refused (a bug), not dropped.
answer = with_config(ConfigDict(extra="forbid"))
Time = str | None  # ISO-8601 UTC with a "Z"; null when unknown
Extra = Annotated[
    bool, Field(description="An extra round (`canary round --now`) or a focused check.")
]


def parse_when(text: str) -> datetime:
    """ISO-8601 to an aware UTC datetime (naive means UTC); raises ValueError when unreadable."""
    value = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@answer
class QuarantineRecord(TypedDict):
    id: int
    model: str
    provider: str
    since: Time
    until: Time
    step: int
    reason: str
    causes: list[str]
    withheld: Annotated[bool, Field(description="The capacity floor holds it off the list.")]
    released_at: Time
    release_why: str | None
    evidence: list[JsonValue]


@answer
class AuditRecord(TypedDict):
    id: int
    at: Time
    event: str
    actor: str
    model: str | None
    provider: str | None
    detail: dict[str, JsonValue]
    evidence: list[JsonValue]
    policy_version: str | None


@answer
class ExclusionRecord(TypedDict):
    """A built-in, runtime, control or maintenance entry in force."""

    id: Annotated[int | None, Field(description="Runtime entries only.")]
    model: str
    provider: Annotated[str, Field(description="An endpoint tag or a provider slug.")]
    layer: str
    reason: str
    since: Time
    until: Time


@answer
class RoundRecord(TypedDict):
    id: int
    model: str
    scheduled_at: Time
    started_at: Time
    finished_at: Time
    status: str
    policy_version: str | None
    cost_usd: float | None
    skipped: list[SkippedEndpoint]
    extra: Extra
    kind: Annotated[
        Literal["round", "focused"],
        Field(
            description="`focused`: a check an app's report started (it counts its failures only)."
        ),
    ]


@answer
class ResultRecord(TypedDict):
    contract: str
    result: str
    detail: str


@answer
class HistoryRecord(TypedDict):
    round_id: int
    at: Time
    round_status: str
    extra: Extra
    verdict: str
    language_anomaly_in: str | None
    results: list[ResultRecord]


def quarantine_json(row: QuarantineRow) -> QuarantineRecord:
    """The CLI/API shape of one quarantine: {model, provider, since, until, step, reason, ...}."""
    return {
        "id": row.id,
        "model": row.model,
        "provider": row.tag,
        "since": iso(row.started_at),
        "until": iso(row.until),
        "step": row.step,
        "reason": row.reason,
        "causes": list(row.causes),
        "withheld": row.withheld_at is not None,
        "released_at": iso(row.released_at),
        "release_why": row.release_why,
        "evidence": looks_json(row.evidence),
    }


def audit_json(row: AuditRow) -> AuditRecord:
    """The CLI/API shape of one audit record: {at, event, actor, model, provider, detail}."""
    return {
        "id": row.id,
        "at": iso(row.at),
        "event": row.event,
        "actor": row.actor,
        "model": row.model,
        "provider": row.tag,
        "detail": row.detail,
        "evidence": looks_json(row.evidence),
        "policy_version": row.policy_version,
    }


def exclusion_json(entry: Exclusion) -> ExclusionRecord:
    return {
        "id": entry.id,
        "model": entry.model,
        "provider": entry.tag,
        "layer": entry.layer.value,
        "reason": entry.reason,
        "since": iso(entry.since),
        "until": iso(entry.until),
    }


def round_json(row: RoundRow) -> RoundRecord:
    return {
        "id": row.id,
        "model": row.model,
        "scheduled_at": iso(row.scheduled_at),
        "started_at": iso(row.started_at),
        "finished_at": iso(row.finished_at),
        "status": row.status,
        "policy_version": row.policy_version,
        "cost_usd": row.cost_usd,
        "skipped": list(row.skipped),
        "extra": bool(row.detail.get("extra")),
        "kind": "focused" if row.detail.get("focused") else "round",
    }


def history_json(row: HistoryRow) -> HistoryRecord:
    """One round's verdict of one provider, with its contract results."""
    return {
        "round_id": row.round_id,
        "at": iso(row.at),
        "round_status": row.round_status,
        "extra": row.extra,
        "verdict": row.verdict,
        "language_anomaly_in": row.language_anomaly_in,
        "results": [
            {"contract": c.contract, "result": c.result, "detail": c.detail} for c in row.results
        ],
    }


def names(values: Collection[str]) -> str:
    return ", ".join(sorted(values)) or "none"


RESULT_SYMBOLS = {
    "pass": "✓",
    "fail": "✗",
    "inconclusive": "?",
    "transport_error": "⚡",
    "not_applicable": "–",
}


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def usd(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"
