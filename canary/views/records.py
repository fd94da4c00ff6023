"""Plain JSON shapes of what the store hands out, shared by the API and the CLI, and the two
time helpers they share (ISO-8601 UTC out, ISO-8601 in)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import TypedDict

from pydantic import JsonValue

from canary.core.layers import iso_utc
from canary.core.model import Exclusion, looks_json
from canary.store.log_rows import AuditRow, HistoryRow
from canary.store.rows import QuarantineRow, RoundRow, SkippedEndpoint

iso = iso_utc  # the one ISO-8601 UTC formatter: "2026-05-01T12:00:00Z", None stays None


def parse_when(text: str) -> datetime:
    """ISO-8601 to an aware UTC datetime (naive means UTC); raises ValueError when unreadable."""
    value = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class QuarantineRecord(TypedDict):
    id: int
    model: str
    provider: str
    since: str | None
    until: str | None
    step: int
    reason: str
    causes: list[str]
    withheld: bool
    released_at: str | None
    release_why: str | None
    evidence: list[JsonValue]


class AuditRecord(TypedDict):
    id: int
    at: str | None
    event: str
    actor: str
    model: str | None
    provider: str | None
    detail: dict[str, JsonValue]
    evidence: list[JsonValue]
    policy_version: str | None


class ExclusionRecord(TypedDict):
    id: int | None
    model: str
    provider: str
    layer: str
    reason: str
    since: str | None
    until: str | None


class RoundRecord(TypedDict):
    id: int
    model: str
    scheduled_at: str | None
    started_at: str | None
    finished_at: str | None
    status: str
    policy_version: str | None
    cost_usd: float | None
    skipped: list[SkippedEndpoint]
    extra: bool
    kind: str  # round | focused (a check an app's report started)


class ResultRecord(TypedDict):
    contract: str
    result: str
    detail: str


class HistoryRecord(TypedDict):
    round_id: int
    at: str | None
    round_status: str
    extra: bool
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
