"""Two rounds seconds apart are not two rounds in a row (issue 30, defect 1), end to end: a daemon
started late in a slot runs that slot at once and the next one on time. Real rounds on a virtual
clock: the in-process simulator, the real client, the runner as ``serve`` calls it (the slot taken
from the clock), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from drill_kit import MODEL, fault, provider, scenario, settings

from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import DRILL_START, SIM_KEY
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring
from canary.sim.server import start_simulator
from canary.store.repository import Store

INTERVAL = timedelta(minutes=30)
LATE = DRILL_START + INTERVAL - timedelta(seconds=9)  # started 9 s before its slot ends
STARTS = (LATE, DRILL_START + INTERVAL, DRILL_START + 2 * INTERVAL)


async def _rounds(url: str, starts: tuple[datetime, ...]) -> list[ModelRound]:
    fleet = scenario(
        *(provider(t) for t in ("alpha", "bravo", "charlie")),
        provider("delta", fault("schema_break", how="missing_field")),
    )
    with start_simulator(fleet, detector=False) as sim:
        base = settings(database_url=url, mode="enforce")
        base = base.replace(openrouter=base.openrouter.replace(base_url=sim.base_url))
        wiring = build_wiring(base)
        reports = []
        try:
            async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
                for at in starts:
                    # as serve runs a round: the slot is the clock's, no scheduled time given
                    runner = RoundRunner(wiring, client, clock=lambda at=at: at)
                    (report,) = await runner.run()
                    assert report.error is None, report.error
                    reports.append(report)
        finally:
            wiring.store.dispose()
    return reports


def test_a_daemon_started_late_in_a_slot_does_not_quarantine_on_two_rounds_seconds_apart(
    store_url: str,
) -> None:
    late, on_time, next_slot = asyncio.run(_rounds(store_url, STARTS))
    assert late.verdicts["delta"].verdict.value == "fail"
    assert on_time.verdicts["delta"].verdict.value == "fail"
    assert not [e for e in (*late.events, *on_time.events) if e.kind.value == "quarantine"]
    [skipped] = [e for e in on_time.events if e.kind.value == "not_counted"]
    assert skipped.tag == "delta" and skipped.detail["not_counted"] == "too_close"
    assert skipped.detail["contracts"] == ["schema"]
    [quarantine] = [e for e in next_slot.events if e.kind.value == "quarantine"]
    assert quarantine.tag == "delta"
    from canary.core.model import Look

    store = Store(store_url)
    try:
        [row] = [q for q in store.quarantines(MODEL) if q.tag == "delta"]
        assert row.evidence == (
            Look.round(late.round_id or 0, LATE),
            Look.round(next_slot.round_id or 0, STARTS[2]),
        )  # the two looks that advanced the count, half an hour apart; not the one 9 s later
        rows = store.audit(MODEL)
        [audited] = [r for r in rows if r.event == "not_counted"]
        assert audited.tag == "delta" and audited.detail["not_counted"] == "too_close"
        assert audited.evidence == (Look.round(on_time.round_id or 0, STARTS[1]),)
        [quarantined] = [r for r in rows if r.event == "quarantine"]
        assert quarantined.evidence == row.evidence
    finally:
        store.dispose()
