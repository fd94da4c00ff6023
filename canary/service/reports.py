"""Taking an app's report in (``POST /v1/reports``, ``canary report add``): its symptom checked,
the provider it names mapped to endpoints through the latest listing, the rate limits applied,
and the report stored (the rules are :mod:`canary.core.reports`'). A report starts no probe
here: the daemon's focused checks (:mod:`canary.rounds.focused`) pick the pending ones up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import JsonValue

from canary.config.settings import Settings
from canary.core.identity import Listed, named_tags
from canary.core.model import Layer
from canary.core.reports import (
    Outcome,
    Symptom,
    admission,
    contracts_of,
    endpoints_named,
    retry_after,
)
from canary.store._decode import listing_of
from canary.store._reports import NewReport, ReportRow
from canary.store.repository import Store
from canary.views.records import iso

MINUTE = timedelta(minutes=1)
NO_NAME = "the report names no provider and no generation id"
NOT_LISTED = "no endpoint of the latest listing is named {!r}"
RESOLVING = "resolving the generation id"


class UnknownSymptom(ValueError):
    def __init__(self, given: str) -> None:
        known = ", ".join(s.value for s in Symptom)
        super().__init__(f"unknown symptom {given!r}; known: {known}")


class TooManyReports(Exception):
    """Over the sender's rate limit: nothing was stored."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"too many reports from this token; retry after {seconds:.0f} s")
        self.seconds = seconds


@dataclass(frozen=True)
class Taken:
    report: ReportRow
    created: bool  # False: its generation id was reported already (the stored one is answered)
    retry_after: float | None = None  # over the per-endpoint limit: stored rate_limited


@dataclass(frozen=True)
class Said:
    """What a report says, as an app sends it."""

    model: str
    symptom: str
    provider: str | None = None
    generation_id: str | None = None
    language: str | None = None
    note: str | None = None
    at: datetime | None = None


RATE_LIMITED = "over the per-endpoint limit"


@dataclass(frozen=True)
class Admitted:
    outcome: Outcome
    reason: str | None
    retry_after: float | None  # rate_limited: the seconds a 429 names


def admit(
    store: Store,
    settings: Settings,
    model: str,
    tags: Sequence[str],
    now: datetime,
    *,
    report_id: int | None = None,
) -> Admitted:
    """The per-endpoint limit and the maintenance test of a report naming ``tags``
    (:func:`canary.core.reports.admission`), whether the app named its provider or canary
    resolved it later (``report_id``: the stored report, left out of its own count)."""
    if not tags:
        return Admitted(Outcome.pending, None, None)
    near = store.reports(model=model, received_since=now - MINUTE, limit=1000)
    on_them = [
        r.received_at for r in near if r.id != report_id and not set(r.tags).isdisjoint(tags)
    ]
    windows = store.active_exclusions(model, now, Layer.maintenance)
    maintained = named_tags(windows, [Listed(t) for t in tags], now) if windows else frozenset()
    outcome, wait = admission(
        tags, on_them, now, settings.reports.per_endpoint_per_minute, MINUTE, maintained
    )
    return Admitted(outcome, RATE_LIMITED if wait is not None else None, wait)


def tags_named(store: Store, model: str, provider: str) -> tuple[str, ...]:
    """The endpoints of the model's latest listing that a provider name names
    (:func:`canary.core.reports.endpoints_named`)."""
    listed = listing_of(store.latest_snapshot(model)) or ()
    return endpoints_named(provider, {e.tag: e.name for e in listed})


def take_report(store: Store, settings: Settings, said: Said, sender: str, now: datetime) -> Taken:
    """Check, attribute, rate-limit and store one report (a store error propagates)."""
    try:
        symptom = Symptom(said.symptom)
    except ValueError:
        raise UnknownSymptom(said.symptom) from None
    limits = settings.reports
    if said.generation_id is not None:  # a repeat answers the stored report, whatever the limits
        known = store.reports_by_generation(said.generation_id)
        if known is not None:
            return Taken(known, False)
    came = store.reports(
        sender=sender, received_since=now - MINUTE, limit=limits.per_token_per_minute
    )
    recent = [r.received_at for r in came]
    wait = retry_after(recent, now, limits.per_token_per_minute, MINUTE)
    if wait is not None:
        raise TooManyReports(wait)
    tags: tuple[str, ...] = ()
    outcome, reason = Outcome.pending, None
    if said.provider is not None:
        tags = tags_named(store, said.model, said.provider)
        if not tags:
            outcome, reason = Outcome.unattributed, NOT_LISTED.format(said.provider)
    elif said.generation_id is None:
        outcome, reason = Outcome.unattributed, NO_NAME
    else:
        reason = RESOLVING
    admitted = admit(store, settings, said.model, tags, now)
    wait = admitted.retry_after
    if admitted.outcome is not Outcome.pending:
        outcome, reason = admitted.outcome, admitted.reason
    note = None if said.note is None else said.note[: limits.max_note_chars] or None
    new = NewReport(
        at=said.at or now,
        model=said.model,
        provider=said.provider,
        tags=tags,
        generation_id=said.generation_id,
        symptom=symptom.value,
        contracts=tuple(c.value for c in contracts_of(symptom)),
        language=said.language,
        note=note,
        sender=sender,
        outcome=outcome.value,
        received_at=now,
        reason=reason,
    )
    row, created = store.add_report(new)
    if created:
        from canary.service.metrics import PROCESS

        PROCESS.observe_report(row.outcome)
    return Taken(row, created, wait if created else None)


def report_json(row: ReportRow, *, notes: bool) -> dict[str, JsonValue]:
    """A report as the API and the CLI show it; its note only when ``notes`` (operators)."""
    body: dict[str, JsonValue] = {
        "id": row.id,
        "at": iso(row.at),
        "model": row.model,
        "provider": row.provider,
        "endpoints": list(row.tags),
        "generation_id": row.generation_id,
        "symptom": row.symptom,
        "contracts": list(row.contracts),
        "language": row.language,
        "outcome": row.outcome,
        "reason": row.reason,
        "checks": list(row.checks),
    }
    if notes:
        body["note"] = row.note
    return body
