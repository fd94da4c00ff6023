"""Drills: the in-process simulator, a fresh store and real rounds on a virtual clock.

Round k (1-based) happens at start + (k-1) × interval (+ any `advance_hours` so far); the
scenario's timeline entries for round k are applied to the simulator just before it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from canary.core.layers import merge_layers
from canary.core.model import Event, EventKind, RoundVerdict
from canary.runner import ModelRound, RoundRunner, slot_of
from canary.settings import ModelSettings, Settings
from canary.wiring import Wiring, build_wiring

SIM_KEY = "sim-drill-key"
DRILL_START = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass
class DrillResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]


def iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z") if at else None


def drill_settings(
    base: Settings,
    scenario_models: Sequence[str],
    *,
    base_url: str,
    database_url: str,
    mode: str | None,
    interval_minutes: float | None,
) -> Settings:
    configured = {m.id: m for m in base.models}
    models = tuple(configured.get(m, ModelSettings(id=m)) for m in scenario_models)
    update: dict[str, Any] = {
        "database_url": database_url,
        "models": models,
        "openrouter": base.openrouter.model_copy(update={"base_url": base_url, "api_key": SIM_KEY}),
    }
    if mode:
        update["mode"] = mode
    if interval_minutes:
        update["interval_minutes"] = interval_minutes
    return base.model_copy(update=update)


@contextmanager
def drill_store_url(explicit: str | None) -> Iterator[str]:
    if explicit:
        yield explicit
        return
    with tempfile.TemporaryDirectory(prefix="canary-drill-") as folder:
        yield f"sqlite:///{Path(folder) / 'drill.db'}"


def verdict_event(k: int, at: datetime, verdict: RoundVerdict) -> dict[str, Any]:
    return {
        "round": k,
        "at": iso(at),
        "event": "verdict",
        "model": verdict.model,
        "provider": verdict.tag,
        "verdict": verdict.verdict.value,
        "contracts": {
            r.contract.value: {"result": r.result.value, "detail": r.detail, "reason": r.reason}
            for r in verdict.results
        },
    }


def decision_event(k: int, at: datetime, event: Event) -> dict[str, Any]:
    body: dict[str, Any] = {
        "round": k,
        "at": iso(at),
        "event": event.kind.value,
        "model": event.model,
        "provider": event.tag,
    }
    for key, value in event.detail.items():
        body.setdefault(key, iso(value) if isinstance(value, datetime) else value)
    if event.evidence:
        body["evidence"] = list(event.evidence)
    return body


def round_events(k: int, report: ModelRound) -> list[dict[str, Any]]:
    lines = [verdict_event(k, report.at, v) for _, v in sorted(report.verdicts.items())]
    lines += [
        decision_event(k, report.at, e)
        for e in report.events
        if e.kind is not EventKind.verdict
    ]
    return lines


def ignore_lists(wiring: Wiring, models: Sequence[str], now: datetime) -> dict[str, list[str]]:
    lists = {}
    for model in models:
        entries = merge_layers(
            model,
            wiring.builtin_for(model),
            wiring.store.active_exclusions(model, now),
            wiring.store.active_quarantines(model, now) if wiring.settings.mode == "enforce" else [],
            now,
        )
        lists[model] = sorted({e.tag for e in entries})
    return lists


async def run_drill(
    scenario: Path | Mapping[str, Any],
    rounds: int,
    base_settings: Settings,
    *,
    mode: str | None = None,
    interval_minutes: float | None = None,
    database_url: str | None = None,
    emit: Callable[[dict[str, Any]], None] | None = None,
    start: datetime = DRILL_START,
) -> DrillResult:
    from canary.openrouter.client import OpenRouterClient
    from canary.sim.scenario import load_scenario
    from canary.sim.server import start_simulator

    loaded = load_scenario(scenario)
    timeline = list(loaded.timeline)
    model_ids = [m.id for m in loaded.models]
    result = DrillResult()

    def out(line: dict[str, Any]) -> None:
        result.events.append(line)
        if emit is not None:
            emit(line)

    with start_simulator(loaded) as sim, drill_store_url(database_url) as store_url:
        settings = drill_settings(
            base_settings,
            model_ids,
            base_url=sim.base_url,
            database_url=store_url,
            mode=mode,
            interval_minutes=interval_minutes,
        )
        wiring = build_wiring(settings)
        offset = timedelta()
        now = start
        try:
            async with OpenRouterClient(
                settings.openrouter.base_url,
                SIM_KEY,
                connect_timeout_s=settings.openrouter.connect_timeout_s,
                first_token_timeout_s=settings.openrouter.first_token_timeout_s,
                stream_timeout_s=settings.openrouter.stream_timeout_s,
                listing_deadline_s=settings.openrouter.listing_deadline_s,
                max_connections=settings.concurrency,
            ) as client:
                for k in range(1, rounds + 1):
                    for entry in [e for e in timeline if _round_of(e) == k]:
                        if "advance_hours" in _as_dict(entry):
                            offset += timedelta(hours=float(_as_dict(entry)["advance_hours"]))
                        else:
                            sim.state.apply(entry)
                    now = start + (k - 1) * timedelta(minutes=settings.interval_minutes) + offset
                    runner = RoundRunner(wiring, client, clock=lambda at=now: at)
                    for report in await runner.run(scheduled_at=slot_of(now, settings.interval_minutes)):
                        for line in round_events(k, report):
                            out(line)
            summary = {
                "event": "summary",
                "rounds": rounds,
                "at": iso(now),
                "mode": settings.mode,
                "ignore": ignore_lists(wiring, model_ids, now),
                "quarantines": len(result.of_kind("quarantine")),
                "would_quarantine": len(result.of_kind("would_quarantine")),
            }
            result.summary = summary
            out(summary)
        finally:
            wiring.store.dispose()
    return result


def _as_dict(entry: Any) -> dict[str, Any]:
    if isinstance(entry, Mapping):
        return dict(entry)
    if hasattr(entry, "model_dump"):
        return dict(entry.model_dump())
    return dict(vars(entry))


def _round_of(entry: Any) -> int:
    return int(_as_dict(entry)["round"])
