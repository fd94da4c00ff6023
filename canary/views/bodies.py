"""The bodies of the read routes, built once for the API and the CLI: one view, one shape.

``GET /v1/quarantines`` answers :func:`quarantines_body` and ``canary quarantine list --json``
prints it; likewise ``/v1/exclusions`` and ``exclude list``, ``/v1/maintenance`` and
``maintenance list``, ``/v1/audit`` and ``audit``,
``/v1/history`` and ``history``, ``/v1/providers`` and each model of ``status`` (beside its
``ignore_list``, the ``/v1/ignore-list`` document). ``GET /v1/ignore-list`` answers
:func:`ignore_lists_answer` and ``canary ignore-list --json`` prints it. The tables of the CLI
are drawn from the same records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.model import Exclusion, Layer
from canary.service.ignore_list import IgnoreListService, Published
from canary.store._equality import EqualityRecord
from canary.store.repository import Store
from canary.views.cost import CostView, ModelCost, model_cost
from canary.views.equality import EqualityJson, equality_json
from canary.views.providers import ProviderRecord, ProviderView
from canary.views.records import (
    AuditRecord,
    ExclusionRecord,
    HistoryRecord,
    QuarantineRecord,
    RoundRecord,
    Time,
    answer,
    audit_json,
    exclusion_json,
    history_json,
    iso,
    quarantine_json,
    round_json,
)


@answer
class QuarantinesBody(TypedDict):
    model: str | None  # None: every model
    at: Time
    quarantines: list[QuarantineRecord]


@answer
class ExclusionsBody(TypedDict):
    model: str | None
    at: Time
    exclusions: Annotated[
        list[ExclusionRecord], Field(description="Runtime entries, then built-in ones.")
    ]


@answer
class MaintenanceBody(TypedDict):
    model: str | None
    at: Time
    maintenance: Annotated[
        list[ExclusionRecord], Field(description="The maintenance windows in force.")
    ]


@answer
class AuditBody(TypedDict):
    records: Annotated[list[AuditRecord], Field(description="Newest first.")]


@answer
class HistoryBody(TypedDict):
    model: str
    provider: str
    history: list[HistoryRecord]  # newest first


@answer
class RoundsBody(TypedDict):
    model: str
    rounds: list[RoundRecord]


@answer
class ProvidersBody(TypedDict):
    model: str
    at: Time
    providers: Annotated[list[ProviderRecord], Field(description="Worst state first.")]
    cost: ModelCost
    equality: list[EqualityJson]  # each endpoint's latest equality result (advisory)


def quarantines_body(
    store: Store, model: str | None, now: datetime, *, include_ended: bool = False
) -> QuarantinesBody:
    """The quarantines in force at ``now`` (every one ever with ``include_ended``), with their
    causes, evidence and whether the floor withholds them."""
    rows = store.quarantines(model=model, active_only=not include_ended, now=now)
    return {"model": model, "at": iso(now), "quarantines": [quarantine_json(q) for q in rows]}


def exclusions_body(
    store: Store, builtin: Sequence[Exclusion], model: str | None, now: datetime
) -> ExclusionsBody:
    """The runtime and built-in entries in force at ``now``."""
    runtime = store.active_exclusions(model, now)
    reviewed = [e for e in builtin if (model is None or e.model == model) and e.active(now)]
    records = [exclusion_json(e) for e in (*runtime, *reviewed)]
    return {"model": model, "at": iso(now), "exclusions": records}


def maintenance_body(store: Store, model: str | None, now: datetime) -> MaintenanceBody:
    """The maintenance windows in force at ``now``."""
    windows = store.active_exclusions(model, now, Layer.maintenance)
    return {"model": model, "at": iso(now), "maintenance": [exclusion_json(e) for e in windows]}


def audit_body(store: Store, model: str | None, since: datetime | None, limit: int) -> AuditBody:
    return {"records": [audit_json(r) for r in store.audit(model=model, since=since, limit=limit)]}


def history_body(store: Store, model: str, provider: str, limit: int) -> HistoryBody:
    """One endpoint's round verdicts and contract results, newest first."""
    rows = store.history(model, provider, limit)
    return {"model": model, "provider": provider, "history": [history_json(r) for r in rows]}


def rounds_body(store: Store, model: str, limit: int) -> RoundsBody:
    return {"model": model, "rounds": [round_json(r) for r in store.recent_rounds(model, limit)]}


def providers_body(
    model: str,
    now: datetime,
    views: Sequence[ProviderView],
    spend: CostView,
    equality: Sequence[EqualityRecord] = (),
) -> ProvidersBody:
    """A model's endpoints (from :func:`canary.views.providers.provider_views`), its probe
    cost (from :func:`canary.views.cost.cost_view`, which may hold other models too) and its
    endpoints' latest equality results."""
    return {
        "model": model,
        "at": iso(now),
        "providers": [v.as_json() for v in views],
        "cost": model_cost(spend, model),
        "equality": [equality_json(r) for r in equality],
    }


@dataclass(frozen=True)
class IgnoreListsAnswer:
    """``GET /v1/ignore-list``'s body and weak ETag, for one model or several."""

    body: bytes
    etag: str
    parts: tuple[Published, ...]  # what it was built from, in the order asked


def ignore_lists_answer(
    service: IgnoreListService,
    models: Sequence[str],
    needs: frozenset[str] = frozenset(),
    profile: str | None = None,
) -> IgnoreListsAnswer:
    """The published list of each of ``models`` (repeats count once, in the order first asked),
    each cut for ``needs``. One model: its document as it is published. Several:
    ``{"lists": [document, ...]}`` under one weak ETag over every document's own tag, so it
    changes when any of them does; with ``profile``, that task profile's lists. Raises
    UnknownModel, UnknownProfile or ListUnavailable for the first model that has no list."""
    parts = tuple(service.published(m, needs, profile) for m in dict.fromkeys(models))
    return joined_answer(parts)


def joined_answer(parts: tuple[Published, ...]) -> IgnoreListsAnswer:
    if len(parts) == 1:
        return IgnoreListsAnswer(parts[0].body, parts[0].etag, parts)
    body = b'{"lists":[' + b",".join(p.body for p in parts) + b"]}"
    tags = "\n".join(p.etag for p in parts).encode()
    return IgnoreListsAnswer(body, 'W/"' + hashlib.sha256(tags).hexdigest() + '"', parts)
