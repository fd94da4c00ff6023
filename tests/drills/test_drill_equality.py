"""The equality check end to end: the in-process simulator, the real HTTP client, a fresh store.
A trimmed prompt set (6 stories x 5 samples, the known items) keeps each check under a few
hundred fast requests."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from drill_kit import MODEL, fault, provider, scenario, settings
from sqlite_template import migrated_sqlite

from canary.config.bundled import bundled_dir
from canary.config.equality_set import EqualityPrompts, load_equality_prompts
from canary.config.settings import ModelSettings, Settings
from canary.core.equality import Outcome
from canary.rounds.drill import drill_settings
from canary.rounds.equality import EqualityReport, EqualityRunner, run_due
from canary.rounds.wiring import Wiring, build_wiring, openrouter_client
from canary.sim.scenario import load_scenario
from canary.sim.server import start_simulator

NOW = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def _prompts() -> EqualityPrompts:
    full = load_equality_prompts(bundled_dir("probes"))
    return full.model_copy(update={"prompts": full.prompts[:6], "samples": 5})


@pytest.fixture
def fleet(request: pytest.FixtureRequest) -> Iterator[Wiring]:
    """Four healthy endpoints, one whose chat template is broken, and a positive control."""
    base: Settings = getattr(request, "param", settings())
    broken = provider("delta", fault("template_broken"))
    healthy = [provider(t) for t in ("alpha", "bravo", "charlie", "echo")]
    loaded = load_scenario(scenario(*healthy, broken, provider("filterhost", fault("refusal"))))
    model = ModelSettings(id=MODEL, positive_controls=("filterhost",))
    with start_simulator(loaded, detector=False) as sim, tempfile.TemporaryDirectory() as folder:
        url = migrated_sqlite(Path(folder) / "eq.db")
        s = drill_settings(
            base.replace(models=(model,)), [MODEL], base_url=sim.base_url,
            database_url=url, mode=None, interval_minutes=None,
        )  # fmt: skip
        yield build_wiring(s)


def _check(wiring: Wiring, holder: str = "one", now: datetime = NOW) -> EqualityReport:
    async def run() -> EqualityReport:
        async with openrouter_client(wiring.settings) as client:
            runner = EqualityRunner(
                wiring, client, prompts=_prompts(), clock=lambda: now, holder=holder
            )
            (report,) = await runner.run()
            return report

    return asyncio.run(run())


def test_the_outlier_fails_its_peers_pass_and_the_control_is_left_out(
    fleet: Wiring,
) -> None:
    wiring = fleet
    report = _check(wiring)
    by_tag = {r.tag: r for r in report.results}
    assert "filterhost" not in by_tag
    assert by_tag["delta"].outcome is Outcome.fail
    assert {by_tag[t].outcome for t in ("alpha", "bravo", "charlie", "echo")} == {Outcome.passed}
    assert report.cost_usd > 0
    (row,) = wiring.store.audit(model=MODEL, events=["equality_outlier"])
    assert row.tag == "delta" and row.detail["peers"] == 4
    stored = {r.tag: r for r in wiring.store.latest_equality([MODEL])}
    assert stored["delta"].result == "fail" and stored["delta"].examples
    assert stored["delta"].settings["level"] == 0.01 and stored["delta"].settings["samples"] == 5
    assert _check(wiring, "two").status == "claimed_elsewhere"  # one check a slot


@pytest.mark.slow  # the pooling is tests/core/test_core_equality.py's; drilled: the outlier test
def test_an_excluded_endpoint_is_tested_but_never_pooled(fleet: Wiring) -> None:
    wiring = fleet
    wiring.store.add_exclusion(MODEL, "alpha", "operator", "test", None, NOW, builtin=[], floor=0)
    report = _check(wiring)
    by_tag = {r.tag: r for r in report.results}
    assert by_tag["alpha"].peers == 4  # the four others (delta too: nothing excludes it)
    assert by_tag["bravo"].peers == 3  # charlie, echo, delta: alpha is nobody's peer
    stored = {r.tag: r for r in wiring.store.latest_equality([MODEL])}
    assert stored["alpha"].pooled is False and stored["bravo"].pooled is True


@pytest.mark.parametrize("fleet", [settings(daily_budget_usd=0.0001)], indirect=True)
def test_a_check_the_budget_cannot_afford_is_skipped(fleet: Wiring) -> None:
    wiring = fleet
    report = _check(wiring)
    assert report.status == "skipped" and report.results == ()
    assert wiring.store.latest_equality([MODEL]) == []


@pytest.mark.parametrize("fleet", [settings(daily_budget_usd=1000.0)], indirect=True)
def test_a_check_keeps_of_its_reservation_only_what_it_spent_even_when_it_fails(
    fleet: Wiring, monkeypatch: pytest.MonkeyPatch
) -> None:
    wiring, day = fleet, NOW.date().isoformat()

    async def broken(*_: object) -> object:
        raise RuntimeError("the sampling broke")

    with monkeypatch.context() as patched:
        patched.setattr(EqualityRunner, "_sample", broken)
        assert _check(wiring).status == "abandoned"
    assert wiring.store.budget_reserved(day, 0.0) == pytest.approx(0.0)
    later = NOW + timedelta(days=1)  # the next slot, and the next day's ledger
    report = _check(wiring, "two", later)
    assert report.status == "finished" and report.cost_usd > 0
    assert wiring.store.budget_reserved(later.date().isoformat(), 0.0) == pytest.approx(
        report.cost_usd
    )


@pytest.mark.slow  # the due rule is tests/core's; drilled: the outlier test
def test_the_daemons_job_runs_the_due_checks_once_a_slot(fleet: Wiring) -> None:
    wiring = fleet
    asyncio.run(run_due(wiring, "one", lambda: True, prompts=_prompts()))  # stopping: nothing
    assert wiring.store.latest_equality([MODEL]) == []
    asyncio.run(run_due(wiring, "one", lambda: False, prompts=_prompts()))
    first = wiring.store.latest_equality([MODEL])
    assert {r.tag for r in first} == {"alpha", "bravo", "charlie", "delta", "echo"}
    asyncio.run(run_due(wiring, "two", lambda: False, prompts=_prompts()))  # none due
    assert wiring.store.latest_equality([MODEL]) == first


def test_the_equality_settings_stay_out_of_the_policy_version() -> None:
    from canary.config.probe_set import load_probes
    from canary.config.settings import EqualityCheck
    from canary.core.policy import PolicyRules, policy_version
    from canary.rounds.wiring import decision_settings

    def version(s: Settings) -> str:
        probes = load_probes(s.probes_dir, s.languages)
        rules = PolicyRules.of(s.policy, s.mode, s.interval_minutes)
        return policy_version(rules, decision_settings(s, probes))

    changed = settings(equality=EqualityCheck(interval_hours=6, level=0.05, min_peers=4))
    assert version(changed) == version(settings())


@pytest.mark.slow  # the pooling is tests/core/test_core_equality.py's; drilled: the outlier test
def test_an_endpoint_in_a_maintenance_window_is_neither_tested_nor_pooled(
    fleet: Wiring,
) -> None:
    wiring = fleet
    wiring.store.add_maintenance(MODEL, "echo", "upgrade", "test", NOW + timedelta(hours=2), NOW)
    by_tag = {r.tag: r for r in _check(wiring).results}
    assert "echo" not in by_tag
    assert by_tag["alpha"].peers == 3  # bravo, charlie, delta
