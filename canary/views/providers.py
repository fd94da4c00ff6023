"""Each provider of a model as operators see it: routing state, per-contract failing counts,
quarantine, the entries that name it, the last round's results and latency."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.controls import Controls
from canary.core.identity import Listed, excluded_by
from canary.core.model import EndpointState, Exclusion, Layer
from canary.store._decode import listing_of
from canary.store.repository import Store
from canary.store.rows import QuarantineRow, ResultMark
from canary.views.latency import Latency, LatencyRecord, fleet_latencies
from canary.views.records import ExclusionRecord, Time, answer, exclusion_json, iso

# Routing states, worst first: the order the status page and the CLI sort providers in.
# Latency (healthy | degraded | unknown) is a separate field: it never changes the routing state.
STATES = ("quarantined", "excluded", "suspect", "healthy", "unknown")


@answer
class QuarantineState(TypedDict):
    since: Time
    until: Time
    step: int | None
    causes: list[str]
    withheld: bool


@answer
class MarkRecord(TypedDict):
    result: str
    detail: str
    round_id: int


@answer
class ProviderRecord(TypedDict):
    provider: str
    name: Annotated[
        str | None, Field(description="OpenRouter's display name in the latest listing.")
    ]
    state: Annotated[str, Field(description="Routing state; latency never changes it.")]
    failing_rounds: Annotated[int, Field(description="The longest per-contract failing count.")]
    failing_by_contract: dict[str, int]
    recovery_rounds: int
    quarantine: QuarantineState | None
    exclusions: Annotated[
        list[ExclusionRecord], Field(description="The entries that name this endpoint.")
    ]
    last_round: Annotated[
        dict[str, MarkRecord], Field(description="Per contract, of the latest round.")
    ]
    ttft_s: dict[str, dict[str, float | int | None]]  # 24h and 7d: {p50, p95, p99, n}
    latency: LatencyRecord


@dataclasses.dataclass(frozen=True)
class ProviderView:
    model: str
    provider: str
    state: str  # routing state: quarantined | excluded | suspect | healthy | unknown
    failing_streak: int  # the longest per-contract failing count
    recovery_streak: int  # while quarantined: rounds in a row where every cause passed
    failing: dict[str, int]  # contract -> its failing count (non-zero ones)
    quarantine_since: datetime | None
    quarantine_until: datetime | None
    quarantine_step: int | None
    quarantine_causes: tuple[str, ...]
    withheld: bool  # its quarantine is held back from the published list by the capacity floor
    # the built-in, runtime and control entries that name it, and its maintenance window
    exclusions: tuple[Exclusion, ...]
    results: Mapping[str, ResultMark]  # contract -> its latest result, detail and round
    latency: Latency  # information only: never part of the routing state
    name: str | None = None  # OpenRouter's display name (provider_name) in the latest listing

    @property
    def exclusion_notes(self) -> list[str]:
        """Each entry that names it, as ``layer: reason`` (``layer entry: reason`` when the
        entry is a provider slug naming this endpoint among others; a maintenance window says
        when it ends)."""
        return [
            f"{e.layer.value}{'' if e.tag == self.provider else ' ' + e.tag}"
            f"{f' until {iso(e.until)}' if e.layer is Layer.maintenance else ''}: {e.reason}"
            for e in self.exclusions
        ]

    def as_json(self) -> ProviderRecord:
        return {
            "provider": self.provider,
            "name": self.name,
            "state": self.state,
            "failing_rounds": self.failing_streak,
            "failing_by_contract": dict(self.failing),
            "recovery_rounds": self.recovery_streak,
            "quarantine": None
            if self.quarantine_until is None
            else {
                "since": iso(self.quarantine_since),
                "until": iso(self.quarantine_until),
                "step": self.quarantine_step,
                "causes": list(self.quarantine_causes),
                "withheld": self.withheld,
            },
            "exclusions": [exclusion_json(e) for e in self.exclusions],
            "last_round": {
                c: {"result": m.result, "detail": m.detail, "round_id": m.round_id}
                for c, m in self.results.items()
            },
            "ttft_s": {"24h": self.latency.day, "7d": self.latency.week},
            "latency": self.latency.as_json(),
        }


def named_endpoints(entry: str, layer: str, views: Sequence[ProviderView]) -> list[str]:
    """The endpoints among ``views`` that an entry of the published list names: those whose
    ``exclusions`` hold it (a built-in or runtime entry, by tag or by provider slug), and the
    endpoint of that very tag (a quarantine)."""
    return [
        v.provider
        for v in views
        if v.provider == entry
        or any(x.tag == entry and x.layer.value == layer for x in v.exclusions)
    ]


def _state_of(*, quarantined: bool, excluded: bool, failing: int, seen: bool) -> str:
    if quarantined:
        return "quarantined"
    if excluded:
        return "excluded"
    if failing > 0:
        return "suspect"
    return "healthy" if seen else "unknown"


def provider_views(
    store: Store,
    model: str,
    *,
    builtin: Sequence[Exclusion],
    now: datetime,
    degraded_p95_s: float,
    spark: bool = False,
    controls: Mapping[str, Controls] | None = None,
) -> list[ProviderView]:
    """Every endpoint of the model known to the store (listed, judged, with a state or a
    quarantine), worst state first (with each one's latest latency samples when ``spark``: the
    status page draws them). An entry is not an endpoint: a built-in or runtime entry names
    endpoints (in their ``exclusions``) and adds none of its own; a slug that names no known
    endpoint is shown as an entry of the published list, not here. A positive control (in
    ``controls``, by model) is excluded by its control entry when the model publishes it."""
    return provider_views_of(
        store, [model], builtin=builtin, now=now, degraded_p95_s=degraded_p95_s, spark=spark,
        controls=controls,
    )[model]  # fmt: skip


def provider_views_of(
    store: Store,
    models: Sequence[str],
    *,
    builtin: Sequence[Exclusion],
    now: datetime,
    degraded_p95_s: float,
    spark: bool = False,
    controls: Mapping[str, Controls] | None = None,
) -> dict[str, list[ProviderView]]:
    """:func:`provider_views` of several models, each store read made once for all of them."""
    models = list(dict.fromkeys(models))
    states_of = store.load_states_of(models)
    latest_of = store.latest_marks_of(models)
    active = store.quarantines(model=None, active_only=True, now=now)
    runtime = store.active_exclusions(None, now)
    windows = store.active_exclusions(None, now, Layer.maintenance)
    known_of = store.known_tags_of(models)
    snapshots = store.latest_snapshots(models)
    listings = {m: listing_of(snapshots[m]) for m in models}
    quarantined_of: dict[str, dict[str, QuarantineRow]] = {m: {} for m in models}
    for q in active:  # at most one open quarantine per endpoint
        if q.model in quarantined_of:
            quarantined_of[q.model][q.tag] = q
    shown = [e for m, c in (controls or {}).items() if m in quarantined_of for e in c.entries(m)]
    human = [e for e in (*builtin, *runtime, *shown, *windows) if e.active(now)]
    tags_of = {
        m: sorted({*known_of[m], *states_of[m], *latest_of[m], *quarantined_of[m]}) for m in models
    }
    layered_of = {
        m: _named_by(tags_of[m], listings[m] or (), [e for e in human if e.model == m], now)
        for m in models
    }
    latency_of = fleet_latencies(
        store, models, now, degraded_p95_s, tags_of, snapshots, spark=spark
    )
    return {
        m: _views(
            m,
            tags_of[m],
            states_of[m],
            latest_of[m],
            quarantined_of[m],
            layered_of[m],
            latency_of[m],
            {e.tag: e.name for e in listings[m] or ()},
        )
        for m in models
    }


def _named_by(
    tags: Sequence[str],
    listing: Sequence[Listed],
    entries: Sequence[Exclusion],
    now: datetime,
) -> dict[str, list[Exclusion]]:
    """Which built-in, runtime and control entries name each endpoint (a base slug names them
    all, but an endpoint with a service tier only by its full tag, as its latest listing says; a
    control's entry only its own tag)."""
    listed = {e.tag: e for e in listing}
    named = {}
    for tag in tags:
        hits = excluded_by(entries, listed.get(tag) or Listed(tag), now)
        if hits:
            named[tag] = hits
    return named


def _views(
    model: str,
    tags: Sequence[str],
    states: Mapping[str, EndpointState],
    latest: Mapping[str, Mapping[str, ResultMark]],
    quarantines: Mapping[str, QuarantineRow],
    layered: Mapping[str, list[Exclusion]],
    latency: Mapping[str, Latency],
    display: Mapping[str, str | None],
) -> list[ProviderView]:
    views = []
    for tag in tags:
        state = states.get(tag)
        quarantine = quarantines.get(tag)
        views.append(
            ProviderView(
                model=model,
                provider=tag,
                state=_state_of(
                    quarantined=quarantine is not None,
                    excluded=any(e.layer is not Layer.maintenance for e in layered.get(tag, ())),
                    failing=state.failing_streak if state else 0,
                    seen=bool(latest.get(tag)) or state is not None,
                ),
                failing_streak=state.failing_streak if state else 0,
                recovery_streak=state.recovery_streak if state else 0,
                failing={s.contract.value: s.count for s in state.streaks} if state else {},
                quarantine_since=quarantine.started_at if quarantine else None,
                quarantine_until=quarantine.until if quarantine else None,
                quarantine_step=quarantine.step if quarantine else None,
                quarantine_causes=tuple(quarantine.causes) if quarantine else (),
                withheld=quarantine is not None and quarantine.withheld_at is not None,
                exclusions=tuple(layered.get(tag, ())),
                results=dict(sorted(latest.get(tag, {}).items())),
                latency=latency[tag],
                name=display.get(tag),
            )
        )
    views.sort(key=lambda v: (STATES.index(v.state), v.provider))
    return views
