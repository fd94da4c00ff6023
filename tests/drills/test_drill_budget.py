"""Probe budget end to end (issue 8): a day's budget that covers about half a round."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from drill_kit import MODEL, drill, fault, provider, rounds_of, scenario, settings, verdicts

from canary.core.cost import token_cost
from canary.core.model import Pricing
from canary.rounds.drill import DRILL_START
from canary.store.repository import Store

HEALTHY = ("alpha", "bravo", "charlie")
FLEET = scenario(*(provider(t) for t in HEALTHY), provider("delta", fault("garbage_prefix")))


def _estimate_per_endpoint() -> float:
    """What the runner budgets for one endpoint: every probe at max_tokens out, 250 tokens in."""
    s = settings()
    probes = s.ttft_samples + 2 + 1  # ttft samples, refusal, language, schema
    price = Pricing(prompt=0.2e-6, completion=0.6e-6)  # the simulator's default prices
    return probes * token_cost(250, s.openrouter.max_tokens, price)


@pytest.mark.slow  # whole rounds; the budget's rules: tests/core/test_core_budget.py
def test_half_a_round_of_budget_probes_quarantined_first_and_freezes_the_skipped(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    # Without a budget: delta fails twice and is quarantined; everyone else passes twice.
    before = drill(FLEET, 2, database_url=url)
    assert rounds_of(before, "quarantine", "delta") == [2]
    with Store(url) as store:
        spent = store.spend(DRILL_START)
        states_before = store.load_states(MODEL)
    assert spent > 0

    # Later that day, a budget that leaves ~2.5 endpoints' worth of probes for the round.
    per_endpoint = _estimate_per_endpoint()
    budget = settings(daily_budget_usd=spent + 2.5 * per_endpoint)
    later = drill(FLEET, 3, database_url=url, base=budget, start=DRILL_START + timedelta(hours=2))

    # the quarantined endpoint is probed every round, and stays quarantined
    assert verdicts(later, "delta") == ["fail", "fail", "fail"]
    assert later.of_kind("release") == [] and later.summary["ignore"] == {MODEL: ["delta"]}
    # the first round could not afford everyone: two healthy endpoints were skipped, not judged
    first = [e for e in later.of_kind("verdict") if e["round"] == 1]
    assert sorted(e["verdict"] for e in first) == ["fail", "pass", "skipped", "skipped"]
    # one alert for the day, however many rounds skip
    (alert,) = later.of_kind("budget")
    assert alert["round"] == 1 and len(alert["skipped"]) == 2
    assert alert["reason"].startswith("budget: not sampled")
    with Store(url) as store:
        assert len(store.audit(MODEL, events=["budget"])) == 1
        rounds = [r for r in store.recent_rounds(MODEL) if r.scheduled_at.hour == 2]
        assert rounds and all("budget" in str(r.skipped) for r in rounds)
        states_after = store.load_states(MODEL)
    # skipped rounds are no evidence: nothing was counted or quarantined on them
    for tag in HEALTHY:
        assert set(verdicts(later, tag)) <= {"pass", "skipped"}
        assert states_after[tag].streaks == states_before[tag].streaks == ()
    assert rounds_of(later, "quarantine") == []
