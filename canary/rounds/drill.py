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

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SecretStr

from canary.config.settings import ModelSettings, Settings, with_changes
from canary.core.events import Event, VerdictEvent
from canary.core.floor import Publication
from canary.core.model import Contract, RoundVerdict, iso_utc, looks_json
from canary.core.plan import slot_of
from canary.openrouter.client import OpenRouterClient
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import Wiring, build_wiring
from canary.sim.scenario import Scenario, parse, read_scenario_file
from canary.sim.server import start_simulator
from canary.tracing import RoundTracer

SIM_KEY = "sim-drill-key"
DRILL_START = datetime(2026, 1, 5, tzinfo=UTC)


class DrillError(RuntimeError):
    """A round of the drill failed inside canary (not a provider's fault): a bug to look at."""

    def __init__(self, round_no: int, model: str, error: str) -> None:
        super().__init__(f"round {round_no} of {model} failed: {error}")
        self.round_no = round_no
        self.model = model
        self.error = error


@dataclass
class DrillResult:
    events: list[dict[str, JsonValue]] = field(default_factory=list)
    summary: dict[str, JsonValue] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, JsonValue]]:
        return [e for e in self.events if e["event"] == kind]


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
        "openrouter": base.openrouter.replace(base_url=base_url, api_key=SecretStr(SIM_KEY)),
    }
    if mode:
        update["mode"] = mode
    if interval_minutes:
        update["interval_minutes"] = interval_minutes
    return with_changes(base, "drill", **update)


@contextmanager
def drill_store_url(explicit: str | None) -> Iterator[str]:
    if explicit:
        yield explicit
        return
    with tempfile.TemporaryDirectory(prefix="canary-drill-") as folder:
        yield f"sqlite:///{Path(folder) / 'drill.db'}"


def verdict_event(k: int, at: datetime, verdict: RoundVerdict) -> dict[str, JsonValue]:
    return {
        "round": k,
        "at": iso_utc(at),
        "event": "verdict",
        "model": verdict.model,
        "provider": verdict.tag,
        "verdict": verdict.verdict.value,
        "language": _language_of(verdict),
        "contracts": {
            r.contract.value: {"result": r.result.value, "detail": r.detail, "reason": r.reason}
            for r in verdict.results
        },
    }


def _language_of(verdict: RoundVerdict) -> str | None:
    result = verdict.result_of(Contract.language)
    return result.language if result is not None else None


def decision_event(k: int, at: datetime, event: Event) -> dict[str, JsonValue]:
    body: dict[str, JsonValue] = {
        "round": k,
        "at": iso_utc(at),
        "event": event.kind.value,
        "model": event.model,
        "provider": event.tag,
    }
    body |= {key: value for key, value in event.detail.items() if key not in body}
    if event.evidence:
        body["evidence"] = looks_json(event.evidence)
    return body


def round_events(k: int, report: ModelRound) -> list[dict[str, JsonValue]]:
    lines = [verdict_event(k, report.at, v) for _, v in sorted(report.verdicts.items())]
    lines += [
        decision_event(k, report.at, e) for e in report.events if not isinstance(e, VerdictEvent)
    ]
    return lines


def publications(wiring: Wiring, models: Sequence[str], now: datetime) -> dict[str, Publication]:
    """Each model's published list, as the API serves it."""
    return {
        model: wiring.decisions.publication(model, wiring.settings.model(model).capacity_floor, now)
        for model in models
    }


async def run_drill(
    scenario: Path | Mapping[str, JsonValue],
    rounds: int,
    base_settings: Settings,
    *,
    mode: str | None = None,
    interval_minutes: float | None = None,
    database_url: str | None = None,
    emit: Callable[[dict[str, JsonValue]], None] | None = None,
    start: datetime = DRILL_START,
    tracer: RoundTracer | None = None,
) -> DrillResult:
    loaded, advances = split_clock_entries(scenario)
    timeline = list(loaded.timeline)
    model_ids = [m.id for m in loaded.models]
    result = DrillResult()

    def out(line: dict[str, JsonValue]) -> None:
        result.events.append(line)
        if emit is not None:
            emit(line)

    with start_simulator(loaded, detector=False) as sim, drill_store_url(database_url) as store_url:
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
                    offset += timedelta(hours=advances.get(k, 0.0))
                    for entry in [e for e in timeline if e.round == k]:
                        sim.state.apply(entry)
                    now = start + (k - 1) * timedelta(minutes=settings.interval_minutes) + offset
                    runner = RoundRunner(wiring, client, clock=_fixed(now), tracer=tracer)
                    for report in await runner.run(
                        scheduled_at=slot_of(now, settings.interval_minutes)
                    ):
                        if report.error is not None:
                            raise DrillError(k, report.model, report.error)
                        for line in round_events(k, report):
                            out(line)
            published = publications(wiring, model_ids, now)
            summary: dict[str, JsonValue] = {
                "event": "summary",
                "rounds": rounds,
                "at": iso_utc(now),
                "mode": settings.mode,
                "ignore": {m: list[JsonValue](p.ignore) for m, p in published.items()},
                "floor_breached": list[JsonValue](
                    sorted(m for m, p in published.items() if p.breached)
                ),
                "quarantines": len(result.of_kind("quarantine")),
                "would_quarantine": len(result.of_kind("would_quarantine")),
            }
            result.summary = summary
            out(summary)
        finally:
            wiring.store.dispose()
    return result


def _fixed(at: datetime) -> Callable[[], datetime]:
    """A clock that stays at ``at``: the virtual time of one drill round."""
    return lambda: at


def split_clock_entries(
    source: Path | str | Mapping[str, JsonValue] | Scenario,
) -> tuple[Scenario, dict[int, float]]:
    """The scenario without its ``{round: k, advance_hours: H}`` entries, and those hours by round.

    Clock entries belong to drills, not to the simulator, so they are taken out before the
    scenario is validated; everything else is validated by :func:`canary.sim.scenario.parse` and
    errors name the source and the entry (``timeline.3: advance_hours: ...``).
    """
    if isinstance(source, Scenario):
        return source, {}
    name = "scenario"
    if isinstance(source, Mapping):
        data = dict(source)
    else:
        path = Path(source)
        name = str(path)
        data = read_scenario_file(path)
    advances: dict[int, float] = {}
    kept = []
    timeline = data.get("timeline")
    for i, entry in enumerate(timeline if isinstance(timeline, list) else ()):
        if isinstance(entry, Mapping) and "advance_hours" in entry:
            jump = parse(ClockEntry, entry, f"{name}: timeline.{i}")
            advances[jump.round] = advances.get(jump.round, 0.0) + jump.advance_hours
        else:
            kept.append(entry)
    if "timeline" in data:
        data["timeline"] = kept
    return parse(Scenario, data, name), advances


class ClockEntry(BaseModel):
    """A drill's ``{round: k, advance_hours: H}`` timeline entry: the virtual clock jumps H hours
    before round k."""

    model_config = ConfigDict(extra="forbid", strict=True)
    round: int = Field(ge=1)
    advance_hours: float = Field(ge=0)
