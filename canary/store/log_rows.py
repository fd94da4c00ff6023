"""The store's other rows: probes, history, the audit log, drift, leases, as
plain frozen dataclasses.

They are kept apart from :mod:`canary.store.rows` (rounds, results, quarantines: what the
published list and ``canary status`` read) so that a read command does not build classes it never
uses: defining a frozen dataclass is a noticeable share of a short command's start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pydantic import JsonValue

from canary.core.events import Event
from canary.core.model import Look
from canary.store.rows import ContractResultRow

# Inputs. The core defines its own equivalent; anything with these attributes fits.


class DriftChangeLike(Protocol):
    @property
    def tag(self) -> str | None: ...
    @property
    def field(self) -> str: ...
    @property
    def old(self) -> JsonValue: ...
    @property
    def new(self) -> JsonValue: ...
    @property
    def alert(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True)
class DriftChange:
    tag: str | None
    field: str
    old: JsonValue
    new: JsonValue
    alert: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class ProbeRow:
    id: int
    round_id: int
    model: str
    tag: str
    contract: str
    language: str | None
    attempt: int
    transport: str
    status: int | None
    error: str | None
    served_by: str | None
    attribution_ok: bool
    ttft_s: float | None
    reasoning_s: float | None
    total_s: float | None
    finish_reason: str | None
    native_finish_reason: str | None
    sample: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    checksum: str
    at: datetime
    ttft_censored: bool = False  # a stall: ttft_s is the first-token timeout, a lower bound


@dataclass(frozen=True)
class HistoryRow:
    """One endpoint's verdict in one round, with its contract results."""

    round_id: int
    at: datetime  # the round's scheduled time
    model: str
    tag: str
    verdict: str
    language_anomaly_in: str | None
    results: tuple[ContractResultRow, ...] = ()
    round_status: str = "finished"  # running | finished | abandoned: only a finished one counts
    extra: bool = False  # an extra round (`canary round --now`): judged, but it decides nothing


@dataclass(frozen=True)
class AuditRow:
    id: int
    at: datetime
    actor: str
    event: str
    model: str | None
    tag: str | None
    detail: dict[str, JsonValue]  # as stored, for the API and webhook bodies
    evidence: tuple[Look, ...]  # the looks it rests on (bare round ids in older rows: no start)
    policy_version: str | None
    round_id: int | None
    notified_at: datetime | None
    notify_attempts: int
    next_attempt_at: datetime | None
    delivered_to: tuple[str, ...]  # the labels of the targets that accepted it
    decided: Event  # the row read as its event (fields, not keys)


@dataclass(frozen=True)
class DriftRow:
    id: int
    round_id: int | None
    model: str
    tag: str | None
    at: datetime
    field: str
    old: JsonValue
    new: JsonValue
    alert: bool
    reason: str | None = None


@dataclass(frozen=True)
class LeaseRow:
    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
