"""A real round (in-process simulator, real client, SQLite) meeting another replica at its worst
moments: reclaimed while its worker thread writes, reclaimed or shut down right after it decided,
beaten right after it finished. Each store below is a real one that does what a second replica
would, at that moment; nothing in production code knows about it. And a served-model change
first answered in an extra round (``canary round --now``) is still alerted by the next round."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import round_of
from pydantic import SecretStr
from sqlite_template import migrated_sqlite

from canary.config.settings import ModelSettings, OpenRouterSettings, Settings
from canary.core.model import Observation
from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import DRILL_START, SIM_KEY
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import Wiring, build_wiring
from canary.sim.server import RunningSimulator, start_simulator
from canary.store.repository import Store

MODEL = "acme/lost-rounds"
OTHER = "other:1"  # the second replica
LATER = timedelta(days=1)  # when the other replica looks at the round


def _provider(tag: str) -> dict[str, Any]:
    return {"tag": tag, "ttft_ms": 5, "tokens_per_second": 50000}


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    fleet = {"seed": 3, "models": [{"id": MODEL, "providers": [_provider(t) for t in "abc"]}]}
    with start_simulator(fleet, detector=False) as sim:
        yield sim


def _reclaim(store: Store, round_id: int) -> int | None:
    """What another replica does to a round whose beats it thinks stopped (every beat of the
    round's fixed clock is older than ``lost_before``)."""
    row = round_of(store, round_id)
    later = row.started_at + LATER
    return store.claim_round(
        row.model, row.scheduled_at, OTHER, row.policy_version, {}, started_at=later,
        lost_before=later,
    )  # fmt: skip


class ReclaimedWhileWriting(Store):
    """Another replica reclaims the round just before its probes are written."""

    def record_observations(
        self,
        round_id: int,
        model: str,
        observations: Sequence[Observation],
        at: datetime,
        **kw: Any,
    ) -> int:
        _reclaim(self, round_id)
        return super().record_observations(round_id, model, observations, at, **kw)


class ReclaimedAfterDeciding(Store):
    """Another replica tries to reclaim the round right after its decision committed."""

    reclaimed: int | None = None

    def apply_decision(self, **kw: Any) -> bool:
        applied = super().apply_decision(**kw)
        if kw["round_id"] is not None:
            self.reclaimed = _reclaim(self, kw["round_id"])
        return applied


class ShutDownAfterDeciding(Store):
    """The daemon's shutdown abandons the replica's running rounds right after a decision."""

    abandoned: int | None = None

    def apply_decision(self, **kw: Any) -> bool:
        applied = super().apply_decision(**kw)
        if kw["round_id"] is not None:
            self.abandoned = self.abandon_rounds_of(kw["holder"], kw["at"], why="shutdown")
        return applied


class BeatenAfterFinishing(Store):
    """A heartbeat lands after the round's end was written, before the round's task resumes."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.finished = threading.Event()
        self.beaten_after = threading.Event()

    def finish_round(self, round_id: int, status: str, **kw: Any) -> None:
        super().finish_round(round_id, status, **kw)
        self.finished.set()
        assert self.beaten_after.wait(10), "no heartbeat came after the round's end"

    def heartbeat_round(self, round_id: int, runner_id: str, at: datetime) -> bool:
        kept = super().heartbeat_round(round_id, runner_id, at)
        if self.finished.is_set():
            self.beaten_after.set()
        return kept


def _settings(sim: RunningSimulator, tmp_path: Path) -> Settings:
    return Settings(
        database_url=migrated_sqlite(tmp_path / "canary.db"),
        mode="enforce",
        languages=("en", "es"),
        models=(ModelSettings(id=MODEL),),
        lease_ttl_s=0.3,
        lease_renew_s=0.01,
        openrouter=OpenRouterSettings(base_url=sim.base_url, api_key=SecretStr(SIM_KEY)),
    )


def _run(wiring: Wiring, at: datetime, *, decides: bool = True) -> ModelRound:
    async def run() -> list[ModelRound]:
        async with OpenRouterClient(wiring.settings.openrouter.base_url, SIM_KEY) as client:
            runner = RoundRunner(wiring, client, clock=lambda: at, decides=decides)
            return await runner.run(at)

    (report,) = asyncio.run(run())
    return report


def _round(
    sim: RunningSimulator, tmp_path: Path, store_class: type[Store]
) -> tuple[ModelRound, Store]:
    settings = _settings(sim, tmp_path)
    store = store_class(settings.database_url)
    return _run(build_wiring(settings, store=store), DRILL_START), store


def test_a_round_reclaimed_while_its_thread_writes_leaves_nothing_that_counts(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    report, store = _round(simulator, tmp_path, ReclaimedWhileWriting)
    assert report.status == "lost" and report.round_id is not None and not report.decided
    with store:
        assert round_of(store, report.round_id).status == "abandoned"
        assert store.probes(report.round_id) == []
        assert store.round_verdicts(report.round_id) == {}
        week = DRILL_START - timedelta(days=7)
        assert store.ttft_histograms_of([MODEL], week, week)[MODEL] == ({}, {})
        assert store.load_states(MODEL) == {}
        assert [a for a in store.audit(MODEL) if a.round_id == report.round_id] == []


def test_a_decided_round_is_not_reclaimed_before_it_ends(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    report, store = _round(simulator, tmp_path, ReclaimedAfterDeciding)
    assert isinstance(store, ReclaimedAfterDeciding) and store.reclaimed is None
    assert report.status == "finished" and report.decided and report.error is None
    with store:
        assert round_of(store, report.round_id or 0).status == "finished"


def test_a_shutdown_right_after_the_decision_leaves_the_round_finished(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    report, store = _round(simulator, tmp_path, ShutDownAfterDeciding)
    assert isinstance(store, ShutDownAfterDeciding) and store.abandoned == 0
    assert report.status == "finished" and report.decided
    with store:
        assert round_of(store, report.round_id or 0).status == "finished"


def test_a_heartbeat_after_the_round_finished_does_not_report_it_lost(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    report, store = _round(simulator, tmp_path, BeatenAfterFinishing)
    assert report.status == "finished" and report.error is None and report.decided


def test_a_served_model_change_first_seen_in_an_extra_round_is_alerted_by_the_next_round(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    wiring = build_wiring(_settings(simulator, tmp_path))
    swap = {"kind": "served_model", "id": "other/model-9"}
    try:
        assert _run(wiring, DRILL_START).error is None
        simulator.state.set_faults(MODEL, "b", [swap])
        extra = _run(wiring, DRILL_START + timedelta(minutes=5), decides=False)
        assert extra.served["b"] == "other/model-9"
        assert [e for e in extra.events if e.kind.value == "drift"] == []  # it decides nothing
        following = _run(wiring, DRILL_START + timedelta(minutes=30))
    finally:
        simulator.state.reset()
        wiring.store.dispose()
    drift = [e for e in following.events if e.kind.value == "drift"]
    assert [(e.tag, e.detail["old"], e.detail["new"], e.detail["alert"]) for e in drift] == [
        ("b", MODEL, "other/model-9", True)
    ]
