"""Focused checks end to end (issue 35): a report makes canary look again at once, through the
round's own probing, judging and decision code. Real checks on a virtual clock: the in-process
simulator, the real client, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import httpx
from drill_kit import fault, provider, scenario, settings
from pydantic import JsonValue

from canary.config.settings import ModelSettings, ReportSettings, Settings
from canary.core.model import Contract, LookKind
from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import DRILL_START, SIM_KEY
from canary.rounds.focused import FocusedChecks
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import Wiring, build_wiring
from canary.service.reports import Said, take_report
from canary.sim.server import RunningSimulator, start_simulator

MINUTE = timedelta(minutes=1)
TAGS = ("alpha", "bravo", "charlie", "delta")


async def _story(
    url: str,
    model: str,
    steps: list[tuple[timedelta, str, str | None]],
    reports: ReportSettings | None = None,
) -> dict[str, object]:
    """Run ``steps`` (offset, what, argument): ``round``, ``break`` (delta breaks its JSON),
    ``report`` (a broken_json report on the argument), ``tick`` (the daemon's focused tick)."""
    seen: dict[str, object] = {"ticks": [], "rounds": []}
    fleet = {**scenario(*(provider(t) for t in TAGS))}
    fleet["models"] = [{"id": model, "providers": [provider(t) for t in TAGS]}]
    with start_simulator(fleet, detector=False) as sim:
        base: Settings = settings(database_url=url, mode="enforce", model=ModelSettings(id=model))
        base = base.replace(openrouter=base.openrouter.replace(base_url=sim.base_url))
        base = base if reports is None else base.replace(reports=reports)
        wiring: Wiring = build_wiring(base)
        try:
            async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
                for offset, what, arg in steps:
                    at = DRILL_START + offset
                    clock = lambda at=at: at  # noqa: E731
                    if what == "round":
                        (r,) = await RoundRunner(wiring, client, clock=clock).run()
                        assert r.error is None, r.error
                        seen["rounds"].append(r)  # type: ignore[attr-defined]
                    elif what == "maintenance":
                        until = at + timedelta(hours=2)
                        wiring.store.add_maintenance(model, str(arg), "upgrade", "ops", until, at)
                    elif what == "break":
                        sim.state.set_faults(model, "delta", [fault("schema_break")])
                    elif what == "report":
                        said = Said(model, "broken_json", provider=arg)
                        take_report(wiring.store, base, said, "app", at)
                    elif what == "answer":  # an app's answer from ``arg``, reported by its id
                        sim.state.generation_lag_s = 0.0
                        gen_id = _answer(sim.base_url, model, str(arg))
                        said = Said(model, "broken_json", generation_id=gen_id)
                        take_report(wiring.store, base, said, "app", at)
                    elif what == "tick_while":  # ``arg`` reported while replica a checks
                        seen["b"], checks = await _replicas(sim, wiring, client, clock, str(arg))
                        seen["ticks"].append(checks)  # type: ignore[attr-defined]
                    else:
                        checks = await FocusedChecks(wiring, client, clock=clock).tick()
                        assert all(c.error is None for c in checks), checks
                        seen["ticks"].append(checks)  # type: ignore[attr-defined]
            seen["states"] = wiring.store.load_states(model)
            seen["reports"] = wiring.store.reports(model=model)
            seen["quarantines"] = wiring.store.quarantines(model)
            seen["rounds_rows"] = wiring.store.recent_rounds(model, limit=20)
        finally:
            wiring.store.dispose()
    return seen


def test_a_report_and_its_second_look_quarantine_in_minutes(store_url: str) -> None:
    seen = asyncio.run(
        _story(
            store_url,
            "acme/focused-1",
            [
                (timedelta(), "round", None),
                (2 * MINUTE, "break", None),
                (3 * MINUTE, "report", "delta"),
                (3 * MINUTE + timedelta(seconds=15), "tick", None),
                (5 * MINUTE, "report", "Delta"),  # the display name; joins the next check
                (5 * MINUTE, "tick", None),  # claimed 2 min ago: no check
                (13 * MINUTE + timedelta(seconds=15), "tick", None),  # the gap after the first
            ],
        )
    )
    first, nothing, second = seen["ticks"]  # type: ignore[misc]
    [check] = first
    assert check.verdicts["delta"].verdict.value == "fail" and check.decided
    assert not [e for e in check.events if e.kind.value == "quarantine"]
    [confirmed] = [e for e in check.events if e.kind.value == "report_confirmed"]
    assert confirmed.tag == "delta" and confirmed.detail["contracts"] == ["schema"]
    assert nothing == []
    [again] = second
    [quarantine] = [e for e in again.events if e.kind.value == "quarantine"]
    assert quarantine.tag == "delta"
    assert [look.kind for look in quarantine.evidence] == [LookKind.focused, LookKind.focused]
    [q] = [q for q in seen["quarantines"] if q.tag == "delta"]  # type: ignore[attr-defined]
    assert q.started_at == DRILL_START + 13 * MINUTE + timedelta(seconds=15)
    outcomes = sorted(r.outcome for r in seen["reports"])  # type: ignore[attr-defined]
    assert outcomes == ["confirmed", "confirmed"]
    focused = [r for r in seen["rounds_rows"] if r.detail.get("focused")]  # type: ignore[attr-defined]
    assert len(focused) == 2 and all(r.detail.get("extra") for r in focused)
    from canary.views.records import round_json

    assert {round_json(r)["kind"] for r in focused} == {"focused"}  # as /v1/rounds shows them


async def _replicas(
    sim: RunningSimulator,
    wiring: Wiring,
    client: OpenRouterClient,
    clock: Callable[[], datetime],
    said: str,
) -> tuple[list[ModelRound], list[ModelRound]]:
    """Replica a ticks; when its check's first probe reaches the simulator (a check is
    running), the reports ``said`` lists (provider:symptom, comma-separated) are taken and
    replica b (a daemon of its own on the same store) ticks, before a's check may go on.
    b's checks and a's."""
    arrived, b_ticked = threading.Event(), threading.Event()
    record, settings = sim.state.record, wiring.settings
    model = settings.models[0].id

    def report_then_wait(entry: dict[str, JsonValue]) -> None:
        record(entry)
        if not arrived.is_set():
            for one in said.split(","):
                provider, symptom = one.split(":")
                take_report(wiring.store, settings, Said(model, symptom, provider), "app", clock())
            arrived.set()
            b_ticked.wait(10)

    other = build_wiring(settings, upgrade=False)
    sim.state.record = report_then_wait  # type: ignore[method-assign]
    try:
        a = asyncio.create_task(FocusedChecks(wiring, client, clock=clock, holder="a").tick())
        await asyncio.to_thread(arrived.wait, 10)
        b = await FocusedChecks(other, client, clock=clock, holder="b").tick()
        b_ticked.set()
        return b, await a
    finally:
        sim.state.record = record  # type: ignore[method-assign]
        b_ticked.set()
        other.store.dispose()


def test_reports_that_come_while_a_check_runs_join_it_on_every_replica(store_url: str) -> None:
    seen = asyncio.run(
        _story(
            store_url,
            "acme/focused-4",
            [
                (timedelta(), "round", None),
                (MINUTE, "break", None),
                (2 * MINUTE, "report", "delta"),
                # while the check runs: delta again (its display name), and alpha (healthy)
                (
                    2 * MINUTE + timedelta(seconds=15),
                    "tick_while",
                    "Delta:broken_json,alpha:broken_json",
                ),
                (5 * MINUTE, "tick", None),  # claimed 3 min ago: no check
            ],  # fmt: skip
        )
    )
    assert seen["b"] == []  # replica b found the contract claimed: it ran no check
    (check,), nothing = seen["ticks"]  # type: ignore[misc]
    assert nothing == []
    assert check.verdicts["delta"].verdict.value == "fail"
    [confirmed] = [e for e in check.events if e.kind.value == "report_confirmed"]
    reports = {(r.provider, r.symptom): r for r in seen["reports"]}  # type: ignore[attr-defined]
    joined = [reports["delta", "broken_json"], reports["Delta", "broken_json"]]
    assert sorted(confirmed.detail["reports"]) == sorted(r.id for r in joined)
    assert [r.outcome for r in joined] == ["confirmed", "confirmed"]
    assert all(r.checks == (check.round_id,) for r in joined)
    alpha = reports["alpha", "broken_json"]
    assert alpha.outcome == "not_confirmed" and alpha.checks == (check.round_id,)


def _answer(base_url: str, model: str, tag: str) -> str:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "provider": {"only": [tag], "allow_fallbacks": False},
    }
    headers = {"Authorization": f"Bearer {SIM_KEY}"}
    answer = httpx.post(f"{base_url}/chat/completions", json=body, headers=headers)
    return str(answer.json()["id"])


def test_a_report_naming_only_its_generation_id_is_attributed_through_openrouter(
    store_url: str,
) -> None:
    seen = asyncio.run(
        _story(
            store_url,
            "acme/focused-3",
            [
                (timedelta(), "round", None),
                (MINUTE, "break", None),
                (2 * MINUTE, "answer", "delta"),
                (2 * MINUTE, "tick", None),
            ],
        )
    )
    [report] = seen["reports"]  # type: ignore[misc]
    assert report.provider == "Delta" and report.tags == ("delta",)
    assert report.outcome == "confirmed" and len(report.checks) == 1


def test_reports_against_clean_endpoints_change_nothing(store_url: str) -> None:
    seen = asyncio.run(
        _story(
            store_url,
            "acme/focused-2",
            [
                (timedelta(), "round", None),
                (MINUTE, "report", "alpha"),
                (MINUTE, "report", "bravo"),
                (2 * MINUTE, "tick", None),
                (13 * MINUTE, "report", "alpha"),
                (13 * MINUTE, "tick", None),
            ],
        )
    )
    ticks: list[list[ModelRound]] = seen["ticks"]  # type: ignore[assignment]
    assert [len(t) for t in ticks] == [1, 1]
    for (check,) in ticks:
        assert check.decided and not [e for e in check.events if e.kind.value == "quarantine"]
        # only the reported contract's probes were sent
        sent = {o.contract for p in check.probings for o in p.observations}
        assert sent == {Contract.schema}
    states = seen["states"]
    assert all(s.streaks == () for s in states.values())  # type: ignore[attr-defined]
    assert {r.outcome for r in seen["reports"]} == {"not_confirmed"}  # type: ignore[attr-defined]


def test_reports_resolved_through_openrouter_meet_the_endpoint_limit_and_maintenance(
    store_url: str,
) -> None:
    """Once canary names a report's provider, the report goes through what a report naming it
    does: the per-endpoint limit (the outcome rate_limited: the app had its answer) and the
    maintenance test (in_maintenance: stored, no check)."""
    seen = asyncio.run(
        _story(
            store_url,
            "acme/focused-5",
            [
                (timedelta(), "round", None),
                (MINUTE, "break", None),
                (MINUTE, "maintenance", "charlie"),
                (2 * MINUTE, "report", "delta"),  # the one report on delta this minute
                (2 * MINUTE, "answer", "delta"),
                (2 * MINUTE, "answer", "charlie"),
                (2 * MINUTE, "answer", "bravo"),
                (2 * MINUTE, "tick", None),
            ],
            reports=ReportSettings(per_endpoint_per_minute=1),
        )
    )
    [[check]] = seen["ticks"]  # type: ignore[misc]
    by = {(r.provider, r.generation_id is None): r for r in seen["reports"]}  # type: ignore[attr-defined]
    named, limited = by["delta", True], by["Delta", False]
    assert named.outcome == "confirmed" and named.checks == (check.round_id,)
    assert limited.tags == ("delta",) and limited.outcome == "rate_limited"
    assert limited.reason == "over the per-endpoint limit" and limited.checks == ()
    maintained = by["Charlie", False]
    assert maintained.tags == ("charlie",) and maintained.outcome == "in_maintenance"
    assert maintained.checks == ()
    clean = by["Bravo", False]  # resolved and admitted: answered by the check
    assert clean.outcome == "not_confirmed" and clean.checks == (check.round_id,)
