"""The nine safety invariants of issue 12, end to end: real rounds, the real client, SQLite.

Each drill reproduces one way the published list used to remove a healthy endpoint or fall below
the capacity floor, and asserts the corrected behaviour.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_runner import CliRunner
from drill_kit import (
    LANGUAGES,
    MODEL,
    TEXT_ONLY,
    drill,
    fault,
    faults_at,
    ignored,
    provider,
    rounds_of,
    scenario,
    settings,
    verdict_line,
    verdicts,
)

from canary.cli.main import app
from canary.config.settings import ModelSettings, Settings
from canary.core.plan import pick_language, round_index, slot_of
from canary.rounds.drill import DRILL_START, run_drill
from canary.rounds.wiring import build_wiring
from canary.store.repository import Store

REPO = Path(__file__).resolve().parents[2]
PREFIX = fault("garbage_prefix")


def probes_with_builtin(tmp_path: Path, *entries: dict[str, Any]) -> Path:
    """A copy of the repository's probe definitions with these built-in entries."""
    probes = tmp_path / "probes"
    shutil.copytree(REPO / "probes", probes)
    body = [
        {"model": MODEL, "reason": "measured", "evidence": "a drill", "since": "2025-01-01", **e}
        for e in entries
    ]
    (probes / "builtin_exclusions.yaml").write_text(yaml.safe_dump({"entries": body}))
    return probes


def with_floor(floor: int, **changes: Any) -> Settings:
    return settings(model=ModelSettings(id=MODEL, capacity_floor=floor), **changes)


def language_of(tag: str, round_no: int, languages: tuple[str, ...] = LANGUAGES) -> str:
    """The language the rotation gives ``tag`` in drill round ``round_no`` (no anomaly pending)."""
    at = DRILL_START + (round_no - 1) * timedelta(minutes=30)
    return pick_language(tag, round_index(at, 30), languages, None)


# 1 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # the floor's count is tests/core's; drilled:
# test_capacity_floor_holds_the_last_endpoints_and_alerts
def test_a_base_slug_builtin_entry_counts_against_the_floor(tmp_path: Path) -> None:
    probes = probes_with_builtin(tmp_path, {"provider": "deepinfra"})
    fleet = scenario(provider("deepinfra/fp8"), provider("alpha", PREFIX), provider("beta"))
    result = drill(fleet, 3, base=with_floor(2, probes_dir=probes))
    assert verdicts(result, "alpha") == ["fail", "fail", "fail"]
    assert result.of_kind("quarantine") == []
    assert rounds_of(result, "floor_held", "alpha") == [2, 3]
    held = result.of_kind("floor_held")[0]
    assert held["usable"] == ["alpha", "beta"]  # deepinfra/fp8 is excluded by its base slug
    assert ignored(result) == ["deepinfra"]
    assert result.summary["floor_breached"] == []


# 2 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # the floor's count is tests/core's; drilled:
# test_capacity_floor_holds_the_last_endpoints_and_alerts
def test_a_builtin_entry_that_has_ended_gives_its_capacity_back(tmp_path: Path) -> None:
    probes = probes_with_builtin(
        tmp_path, {"provider": "c1", "since": "2025-06-01", "until": "2025-09-01"}
    )
    fleet = scenario(provider("a1", PREFIX), provider("b1"), provider("c1"))
    result = drill(fleet, 3, base=with_floor(2, probes_dir=probes))
    assert rounds_of(result, "quarantine", "a1") == [2]
    assert result.of_kind("floor_held") == []
    assert ignored(result) == ["a1"]


# 3 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # six rounds; weak probes are drilled in make check by test_drill_safeguards'
# control drill
def test_clean_answers_count_even_in_rounds_where_the_refusal_probe_is_weak() -> None:
    # The positive control does not filter: every round's refusal results are inconclusive.
    # bravo breaks the schema in round 1, answers cleanly in rounds 2-5 and breaks it in round 6.
    broken = fault("schema_break", how="missing_field")
    fleet = scenario(
        provider("alpha"),
        provider("bravo", broken),
        provider("charlie"),
        provider("delta"),
        provider("filterhost", supported_parameters=TEXT_ONLY),
        timeline=[faults_at(2, "bravo"), faults_at(6, "bravo", broken)],
    )
    base = settings(model=ModelSettings(id=MODEL, positive_controls=("filterhost",)))
    result = drill(fleet, 6, base=base)
    assert rounds_of(result, "probe_weak") == [1, 2, 3, 4, 5, 6]
    schema = [
        verdict_line(result, k, "bravo")["contracts"]["schema"]["result"] for k in range(1, 7)
    ]
    assert schema == ["fail", "pass", "pass", "pass", "pass", "fail"]
    assert result.of_kind("quarantine") == [] and ignored(result) == ["filterhost"]  # a control


# 4 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # the rule's count is tests/core's; drilled:
# test_a_contract_failing_on_most_endpoints_blames_the_model_not_the_providers
def test_the_model_wide_rule_counts_only_usable_endpoints(tmp_path: Path) -> None:
    drift = fault("language_drift", to="pt")
    probes = probes_with_builtin(tmp_path, *({"provider": t} for t in ("x1", "x2", "x3")))
    fleet = scenario(
        *(provider(t, drift) for t in ("x1", "x2", "x3", "newhost")),
        provider("ok1"),
        provider("ok2"),
    )
    result = drill(fleet, 2, base=with_floor(2, probes_dir=probes))
    assert result.of_kind("model_wide") == []
    assert verdicts(result, "newhost") == ["fail", "fail"]
    assert rounds_of(result, "quarantine", "newhost") == [2]
    assert ignored(result) == ["newhost", "x1", "x2", "x3"]


# 5 -------------------------------------------------------------------------------------------


def test_an_operator_exclusion_that_breaches_the_floor_is_refused_unless_forced(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    fleet = scenario(provider("alpha"), provider("bravo"), provider("charlie"))
    drill(fleet, 1, database_url=url, base=with_floor(2))
    config = ops_config(tmp_path, url)
    cli = CliRunner()

    assert exclude(cli, config, "alpha").exit_code == 0
    refused = exclude(cli, config, "bravo")
    assert refused.exit_code == 4
    assert "leaves 1 usable endpoint(s)" in refused.stderr and "floor of 2" in refused.stderr
    forced = exclude(cli, config, "bravo", "--force")
    assert forced.exit_code == 0, forced.output
    listed = cli.invoke(app, ["--config", str(config), "ignore-list", "-m", MODEL, "--json"])
    document = json.loads(listed.stdout)
    assert document["floor_breached"] is True and document["usable_endpoints"] == 1
    with Store(url) as store:
        [breach] = store.audit(MODEL, events=["floor_breached"])
        assert breach.actor.startswith("cli:")
        assert breach.policy_version == document["policy_version"]  # the CLI's own version
        [episode] = store.floor_episodes(MODEL)
        bravo = max(e.id or 0 for e in store.active_exclusions(MODEL, DRILL_START))
        assert episode.detail["action"] == {
            "event": "exclusion_added", "exclusion_id": bravo, "tag": "bravo", "force": True,
            "actor": breach.actor,
        }  # fmt: skip
        assert episode.policy_version == breach.policy_version
        assert [e.tag for e in store.active_exclusions(MODEL, DRILL_START)] == ["alpha", "bravo"]


@pytest.mark.slow  # the refusal is tests/core's; drilled:
# test_an_operator_exclusion_that_breaches_the_floor_is_refused_unless_forced
def test_an_exclusion_that_would_withhold_a_quarantine_is_refused_saying_so(
    tmp_path: Path,
) -> None:
    # a, b, c listed, c quarantined, floor 2: excluding a keeps 2 usable only by publishing c
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    fleet = scenario(provider("a"), provider("b"), provider("c", PREFIX))
    # rounds of the last hour: the CLI weighs the exclusion at the wall clock's now
    start = slot_of(datetime.now(UTC) - timedelta(hours=1), 30)
    result = drill(fleet, 2, database_url=url, base=with_floor(2), start=start)
    assert rounds_of(result, "quarantine", "c") == [2]
    config = ops_config(tmp_path, url)
    cli = CliRunner()
    refused = exclude(cli, config, "a")
    assert refused.exit_code == 4
    message = " ".join(refused.stderr.split())
    assert "would withhold the quarantine of c" in message and "floor of 2" in message
    assert "(2 usable endpoint(s), now 2)" in message and "leaves 1" not in message
    forced = exclude(cli, config, "a", "--force")
    assert forced.exit_code == 0, forced.output
    listed = cli.invoke(app, ["--config", str(config), "ignore-list", "-m", MODEL, "--json"])
    document = json.loads(listed.stdout)
    assert document["withheld"] == ["c"] and document["ignore"] == ["a"]
    assert document["floor_breached"] is False and document["usable_endpoints"] == 2
    with Store(url) as store:
        [held] = store.audit(MODEL, events=["floor_held"])
        assert held.tag == "c" and held.detail["action"]["tag"] == "a"
        assert store.floor_episodes(MODEL) == []


def ops_config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{url}"\nlanguages = ["en", "es"]\n'
        f'[[models]]\nid = "{MODEL}"\ncapacity_floor = 2\n'
    )
    return config


def exclude(cli: CliRunner, config: Path, tag: str, *extra: str) -> Any:
    args = ["--config", str(config), "exclude", "add", "-m", MODEL, "-p", tag, "-r", "ops"]
    return cli.invoke(app, [*args, *extra])


# 6 -------------------------------------------------------------------------------------------


def test_the_policy_version_changes_with_every_setting_that_changes_a_decision() -> None:
    def version(**changes: Any) -> str:
        return build_wiring(settings(**changes), store=_memory(), upgrade=False).policy_version

    base = version()
    timeout = settings().openrouter.replace(first_token_timeout_s=20.0)
    tokens = settings().openrouter.replace(max_tokens=300)
    assert len({base, version(openrouter=timeout), version(openrouter=tokens)}) == 3
    assert version(mode="enforce") != base
    assert version(daily_budget_usd=3.0) != base
    assert version(models=(ModelSettings(id=MODEL, capacity_floor=3),)) != base
    assert version() == base


def _memory() -> Store:
    return Store("sqlite://")


# 7 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # three rounds; weak probes are tests/core's
def test_a_control_missing_from_the_listing_is_said_and_weakens_the_refusal_probe() -> None:
    fleet = scenario(provider("alpha"), provider("bravo"), provider("charlie"))
    base = settings(model=ModelSettings(id=MODEL, positive_controls=("filterhost",)))
    result = drill(fleet, 3, base=base)
    missing = result.of_kind("control_missing")
    assert [e["round"] for e in missing] == [1, 2, 3]
    assert [e["alert"] for e in missing] == [True, False, False]  # at most once a day
    assert missing[0]["missing"] == ["filterhost"]
    assert result.of_kind("probe_weak") == []
    refusal = verdict_line(result, 2, "alpha")["contracts"]["refusal"]
    assert refusal["result"] == "inconclusive" and refusal["reason"] == "control_missing"


# 8 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # several rounds; the pending language is tests/core's
def test_an_inconclusive_repeat_keeps_the_pending_language() -> None:
    # Three languages: with two, the rotation itself would come back to en in round k + 2.
    three = ("en", "es", "pt")
    k = next(r for r in range(1, 10) if language_of("bravo", r, three) == "en")
    assert language_of("bravo", k + 2, three) != "en"  # only the pending language repeats it
    drift = fault("language_drift", to="pt", when_language="en")
    fleet = scenario(
        provider("alpha"),
        provider("bravo"),
        provider("charlie"),
        provider("delta"),
        timeline=[
            faults_at(k, "bravo", drift),
            faults_at(k + 1, "bravo", fault("empty")),  # too short to judge: inconclusive
            faults_at(k + 2, "bravo", drift),
        ],
    )
    result = drill(fleet, k + 2, base=settings(languages=three))
    lines = [verdict_line(result, r, "bravo") for r in (k, k + 1, k + 2)]
    assert [line["language"] for line in lines] == ["en", "en", "en"]
    assert [line["contracts"]["language"]["result"] for line in lines] == [
        "fail", "inconclusive", "fail",
    ]  # fmt: skip
    assert rounds_of(result, "quarantine", "bravo") == [k + 2]


# 9 -------------------------------------------------------------------------------------------


@pytest.mark.slow  # a slow answer on the real clock
def test_two_different_defects_rounds_apart_are_not_failing_rounds_in_a_row() -> None:
    # bravo breaks the schema in round 2, is unreachable in rounds 3-4, and answers slowly in
    # round 5: two different contracts, each failing once. (The threshold leaves the healthy
    # answers, a few milliseconds, far below it even on a loaded machine.)
    slow = fault("slow_first_token", ttft_ms=1200)
    fleet = scenario(
        *(provider(t) for t in ("alpha", "charlie", "delta", "echo", "foxtrot")),
        provider("bravo"),
        timeline=[
            faults_at(2, "bravo", fault("schema_break", how="invalid_json")),
            faults_at(3, "bravo", fault("http_error", status=503)),
            faults_at(5, "bravo", slow),
            faults_at(6, "bravo"),
        ],
    )
    result = drill(fleet, 6, base=settings(ttft_threshold_s=0.6))
    assert verdicts(result, "bravo") == [
        "pass", "fail", "transport_error", "transport_error", "fail", "pass",
    ]  # fmt: skip
    assert verdict_line(result, 5, "bravo")["contracts"]["ttft"]["result"] == "fail"
    assert result.of_kind("quarantine") == [] and ignored(result) == []


def test_a_drill_through_the_cli_reports_the_floor_in_its_summary(tmp_path: Path) -> None:
    probes = probes_with_builtin(tmp_path, {"provider": "deepinfra"})
    source = scenario(provider("deepinfra/fp8"), provider("alpha"))
    lines: list[dict[str, Any]] = []
    asyncio.run(
        run_drill(source, 1, with_floor(2, probes_dir=probes), mode="enforce", emit=lines.append)
    )
    assert lines[-1]["event"] == "summary" and lines[-1]["floor_breached"] == [MODEL]
