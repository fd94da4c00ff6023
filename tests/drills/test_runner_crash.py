"""A crash at any point of a round leaves the store consistent, and the next round proceeds."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import round_of
from drill_kit import MODEL, fault, provider, scenario, settings
from sqlite_template import migrated_sqlite

from canary.config.settings import ModelSettings
from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import DRILL_START, SIM_KEY
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring
from canary.sim.server import start_simulator
from canary.store.repository import Store

INTERVAL = timedelta(minutes=30)
STEPS = (
    "record_snapshots",
    "record_observations",
    "record_verdicts",
    "apply_decision",
    "finish_round",
)  # in the order a round calls them


class StoreGoneAway(RuntimeError):
    pass


class FlakyStore(Store):
    """A real store whose `step` raises once, the first time it is called."""

    def __init__(self, url: str, step: str) -> None:
        super().__init__(url)
        self.armed_step: str | None = step

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name == object.__getattribute__(self, "__dict__").get("armed_step"):

            def once(*args: Any, **kwargs: Any) -> Any:
                self.armed_step = None
                raise StoreGoneAway(f"{name}: connection lost")

            return once
        return attr


async def _three_rounds(url: str, step: str) -> tuple[list[ModelRound], FlakyStore]:
    fleet = scenario(
        provider("alpha"),
        provider("bravo"),
        provider("charlie"),
        provider("delta", fault("garbage_prefix")),
    )
    store = FlakyStore(url, step)
    with start_simulator(fleet, detector=False) as sim:
        base = settings(database_url=url, mode="enforce")
        base = base.replace(openrouter=base.openrouter.replace(base_url=sim.base_url))
        wiring = build_wiring(base, store=store)
        reports = []
        async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
            for k in range(3):
                at = DRILL_START + k * INTERVAL
                (report,) = await RoundRunner(wiring, client, clock=lambda at=at: at).run(at)
                reports.append(report)
    return reports, store


# A crash before the decision's transaction abandons the round whichever write it hit, so the inner
# loop crashes at the last of them (apply_decision) and after the decision (finish_round); `make
# test` crashes at every step.
@pytest.mark.parametrize(
    "step",
    [pytest.param(s, marks=[] if s in STEPS[-2:] else [pytest.mark.slow]) for s in STEPS],
)
def test_a_crash_mid_round_leaves_no_half_decision_and_the_next_round_runs(
    tmp_path: Path, step: str
) -> None:
    url = migrated_sqlite(tmp_path / "crash.db")
    reports, store = asyncio.run(_three_rounds(url, step))
    crashed, second, third = reports
    assert crashed.error is not None and "connection lost" in crashed.error
    assert second.error is None and third.error is None
    assert second.status == third.status == "finished"
    with store:
        row = round_of(store, crashed.round_id or 0)
        audit = [a for a in store.audit(MODEL) if a.round_id == crashed.round_id]
        quarantines = store.quarantines(MODEL, active_only=False)
    assert row.status != "running" and row.detail == {"error": "StoreGoneAway"}
    if crashed.decided:
        # the crash came after the decision's transaction: the decision stands in full
        assert step == "finish_round" and row.status == "finished"
        first_quarantine = 2
    else:
        # nothing of the decision was written: no state, no audit row, no quarantine
        assert row.status == "abandoned"
        assert audit == []
        first_quarantine = 3
    # delta fails every round; the crashed round counts only if its decision was committed
    quarantined_in = [
        i + 1 for i, r in enumerate(reports) if any(e.kind.value == "quarantine" for e in r.events)
    ]
    assert quarantined_in == [first_quarantine]
    assert [q.tag for q in quarantines] == ["delta"]


def test_one_model_failing_its_round_never_stops_the_others(tmp_path: Path) -> None:
    url = migrated_sqlite(tmp_path / "models.db")
    fleet = [provider("alpha"), provider("bravo"), provider("charlie")]
    two = {
        "seed": 3,
        "models": [{"id": MODEL, "providers": fleet}, {"id": "acme/drill-2", "providers": fleet}],
    }

    async def one_round() -> list[ModelRound]:
        with start_simulator(two, detector=False) as sim:
            base = settings(database_url=url, mode="enforce")
            base = base.replace(
                models=(*base.models, ModelSettings(id="acme/drill-2")),
                openrouter=base.openrouter.replace(base_url=sim.base_url),
            )
            wiring = build_wiring(base, store=FlakyStore(url, "apply_decision"))
            async with OpenRouterClient(sim.base_url, SIM_KEY) as client:
                return await RoundRunner(wiring, client, clock=lambda: DRILL_START).run(DRILL_START)

    reports = asyncio.run(one_round())
    assert sorted(r.model for r in reports) == sorted([MODEL, "acme/drill-2"])
    failed = [r for r in reports if r.error is not None]
    assert len(failed) == 1 and failed[0].status == "abandoned"
    (fine,) = [r for r in reports if r.error is None]
    assert fine.status == "finished" and fine.decided
    assert {v.verdict.value for v in fine.verdicts.values()} == {"pass"}
