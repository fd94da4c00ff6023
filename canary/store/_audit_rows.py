"""Audit rows as the store writes them: one per event, in the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue
from sqlalchemy import Connection, insert

from canary.core.events import Event
from canary.store import tables as t
from canary.store._decode import looks_column


def audit_values(
    event: Event, actor: str, policy_version: str | None, at: datetime, round_id: int | None
) -> dict[str, JsonValue | datetime]:
    return {
        "at": at,
        "actor": actor,
        "event": str(event.kind),
        "model": event.model,
        "tag": event.tag,
        "detail": event.detail,
        "evidence": looks_column(event.evidence),
        "policy_version": policy_version,
        "round_id": round_id,
        "notify_attempts": 0,
    }


def write_audit(
    conn: Connection,
    events: Sequence[Event],
    actor: str,
    policy_version: str | None,
    at: datetime,
    round_id: int | None = None,
) -> None:
    if events:
        conn.execute(
            insert(t.audit), [audit_values(e, actor, policy_version, at, round_id) for e in events]
        )


@dataclass(frozen=True)
class AuditRows:
    """Events a write records as audit rows in its own transaction, and who decided them."""

    events: Sequence[Event]
    actor: str
    policy_version: str | None
