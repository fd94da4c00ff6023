"""Stored rows as the frozen dataclasses the store hands out (:mod:`canary.store.rows`,
:mod:`canary.core.model`): one function per kind of row, from the row's mapping."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TypedDict

from pydantic import JsonValue
from sqlalchemy import RowMapping

from canary.core.events import event_of
from canary.core.identity import Listed, capabilities_of
from canary.core.model import (
    Contract,
    EndpointState,
    Exclusion,
    Layer,
    Look,
    Pricing,
    Streak,
    looks_of,
)
from canary.store.log_rows import AuditRow
from canary.store.rows import (
    ContractResultRow,
    QuarantineRow,
    RoundRow,
    SkippedEndpoint,
    Snapshot,
)


def looks_column(looks: Iterable[Look]) -> list[JsonValue]:
    """Looks as a JSON column keeps them (see :meth:`canary.core.model.Look.as_json`)."""
    return [look.as_json() for look in looks]


def _skipped_of(item: JsonValue) -> SkippedEndpoint:
    """A stored skipped entry: ``{provider, reason}``, or a ``[provider, reason]`` pair."""
    if isinstance(item, Mapping):
        return SkippedEndpoint(
            provider=str(item.get("provider")), reason=str(item.get("reason") or "")
        )
    if isinstance(item, list) and len(item) == 2:
        return SkippedEndpoint(provider=str(item[0]), reason=str(item[1]))
    return SkippedEndpoint(provider=str(item), reason="")


def round_row(row: RowMapping) -> RoundRow:
    return RoundRow(
        **{
            **row,
            "checksums": dict(row["checksums"] or {}),
            "skipped": tuple(_skipped_of(s) for s in row["skipped"] or ()),
            "detail": dict(row["detail"] or {}),
        }
    )


def contract_result_row(row: RowMapping, at: datetime | None = None) -> ContractResultRow:
    return ContractResultRow(
        round_id=row["round_id"],
        model=row["model"],
        tag=row["tag"],
        contract=row["contract"],
        result=row["result"],
        detail=row["detail"],
        figure=row["figure"],
        reason=row["reason"],
        sample=row["sample"],
        language=row["language"],
        language_anomaly=bool(row["language_anomaly"]),
        at=at,
    )


def quarantine_row(row: RowMapping) -> QuarantineRow:
    return QuarantineRow(
        **{**row, "evidence": looks_of(row["evidence"]), "causes": tuple(row["causes"] or ())}
    )


def quarantine_exclusion(q: QuarantineRow) -> Exclusion:
    """A quarantine as an entry of the published list's quarantine layer."""
    return Exclusion(
        model=q.model,
        tag=q.tag,
        layer=Layer.quarantine,
        reason=q.reason,
        since=q.started_at,
        until=q.until,
        evidence=q.evidence,
        id=q.id,
        causes=q.causes,
    )


class StoredStreak(TypedDict):
    """One contract's failing count as ``endpoint_state.streaks`` keeps it."""

    contract: str
    count: int
    last_fail_at: str | None  # ISO-8601 UTC
    evidence: list[JsonValue]  # looks (see canary.core.model.Look.of_json)
    warned: bool


def _streaks(raw: list[StoredStreak] | None) -> tuple[Streak, ...]:
    return tuple(
        Streak(
            contract=Contract(s["contract"]),
            count=int(s["count"]),
            last_fail_at=_as_utc(s.get("last_fail_at")),
            evidence=looks_of(s.get("evidence")),
            warned=bool(s.get("warned")),
        )
        for s in raw or ()
    )


def _as_utc(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def endpoint_state(row: RowMapping) -> EndpointState:
    return EndpointState(
        model=row["model"],
        tag=row["tag"],
        streaks=_streaks(row["streaks"]),
        recovery_streak=row["recovery_streak"],
        recovery_evidence=looks_of(row["recovery_evidence"]),
        quarantined_since=row["quarantined_since"],
        quarantined_until=row["quarantined_until"],
        causes=tuple(row["causes"] or ()),
        ladder_step=row["ladder_step"],
        last_quarantine_at=row["last_quarantine_at"],
        next_language=row["next_language"],
        next_language_since=row["next_language_since"],
        version=row["version"],
    )


def runtime_exclusion(row: RowMapping, layer: Layer = Layer.runtime) -> Exclusion:
    """A row of an operator's entries: a runtime exclusion, or a maintenance window."""
    return Exclusion(
        model=row["model"],
        tag=row["tag"],
        layer=layer,
        reason=row["reason"],
        since=row["created_at"],
        until=row["until"],
        id=row["id"],
    )


def listing_of(snapshot: Snapshot | None) -> tuple[Listed, ...] | None:
    if snapshot is None:
        return None
    listed = []
    for tag, meta in sorted(snapshot.items()):
        tier, parameters = meta.get("service_tier"), meta.get("supported_parameters")
        capabilities = capabilities_of(map(str, parameters if isinstance(parameters, list) else ()))
        name = meta.get("provider_name")  # the display name: shown beside the tag
        context, quantization = meta.get("context_length"), meta.get("quantization")
        listed.append(
            Listed(
                tag,
                tier if isinstance(tier, str) else None,
                capabilities,
                name if isinstance(name, str) and name else None,
                context if isinstance(context, int) else None,
                _pricing(meta.get("pricing")),
                quantization if isinstance(quantization, str) else None,
            )
        )
    return tuple(listed)


def _pricing(raw: JsonValue) -> Pricing | None:
    if not isinstance(raw, dict):
        return None
    prompt, completion = raw.get("prompt"), raw.get("completion")
    if isinstance(prompt, int | float) and isinstance(completion, int | float):
        return Pricing(float(prompt), float(completion))
    return None


def audit_row(row: RowMapping) -> AuditRow:
    detail, evidence = dict(row["detail"] or {}), looks_of(row["evidence"])
    decided = event_of(row["event"], row["model"], row["tag"], detail, evidence)
    delivered = tuple(row["delivered_to"] or ())
    fields = {"detail": detail, "evidence": evidence, "delivered_to": delivered}
    return AuditRow(**{**row, **fields, "decided": decided})
