"""The probe budget plan: protected endpoints first, a deterministic sample of the rest."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from canary.core.budget import CONTROL, EXCLUDED, BudgetCandidate, plan_budget, priority_of
from canary.core.model import Contract, EndpointState, Streak

M = "acme/roleplay-1"


def fleet() -> list[BudgetCandidate]:
    return [
        BudgetCandidate(M, "rest-a", 2, 1.0),
        BudgetCandidate(M, "suspect", 1, 1.0),
        BudgetCandidate(M, "rest-b", 2, 1.0),
        BudgetCandidate(M, "quarantined", 0, 1.0),
        BudgetCandidate(M, "rest-c", 2, 1.0),
        BudgetCandidate(M, "rest-d", 2, 1.0),
    ]


def test_no_budget_probes_everything_in_order() -> None:
    plan = plan_budget(fleet(), None, rng_seed=1)
    assert [t for _, t in plan.probe] == [c.tag for c in fleet()]
    assert plan.skipped == () and plan.exceeded is False


def test_a_round_that_fits_probes_everything() -> None:
    plan = plan_budget(fleet(), 6.0, rng_seed=1)
    assert len(plan.probe) == 6 and plan.skipped == () and plan.exceeded is False


def test_over_budget_probes_quarantined_then_suspects_then_a_sample() -> None:
    plan = plan_budget(fleet(), 3.0, rng_seed=1)
    tags = [t for _, t in plan.probe]
    assert tags[:2] == ["quarantined", "suspect"] and len(tags) == 3
    assert tags[2].startswith("rest-")
    assert plan.exceeded is True
    skipped = {t: r for _, t, r in plan.skipped}
    assert set(skipped) | set(tags) == {c.tag for c in fleet()}
    assert not set(skipped) & set(tags)
    assert all(r.startswith("budget: not sampled") for r in skipped.values())


def test_protected_endpoints_are_skipped_only_when_they_do_not_fit() -> None:
    plan = plan_budget(fleet(), 0.5, rng_seed=1)
    assert plan.probe == ()
    reasons = {t: r for _, t, r in plan.skipped}
    assert reasons["quarantined"].startswith("budget: quarantined endpoint needs ~$1.0000")
    assert reasons["suspect"].startswith("budget: suspect endpoint")


def test_a_cheaper_endpoint_still_fits_after_an_expensive_one_is_skipped() -> None:
    candidates = [BudgetCandidate(M, "big", 0, 5.0), BudgetCandidate(M, "small", 0, 1.0)]
    plan = plan_budget(candidates, 2.0, rng_seed=0)
    assert plan.probe == ((M, "small"),)
    assert [t for _, t, _ in plan.skipped] == ["big"]


def test_the_sample_depends_only_on_the_seed_and_the_candidates() -> None:
    a = plan_budget(fleet(), 4.0, rng_seed=7)
    b = plan_budget(list(reversed(fleet())), 4.0, rng_seed=7)
    assert set(a.probe) == set(b.probe)
    samples = {plan_budget(fleet(), 3.0, rng_seed=s).probe[2] for s in range(30)}
    assert len(samples) > 1  # the rest is sampled, not always the same endpoint


@pytest.mark.parametrize("remaining", [0.0, -1.0])
def test_an_exhausted_budget_skips_everything(remaining: float) -> None:
    plan = plan_budget(fleet(), remaining, rng_seed=1)
    assert plan.probe == () and len(plan.skipped) == 6 and plan.exceeded is True


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (None, 2),
        (EndpointState("m", "t"), 2),
        (EndpointState("m", "t", streaks=(Streak(Contract.ttft, 1),)), 1),
        (
            EndpointState(
                "m",
                "t",
                quarantined_until=datetime(2026, 1, 2, tzinfo=UTC),
                streaks=(Streak(Contract.ttft, 3),),
            ),
            0,
        ),
    ],
)
def test_quarantined_then_suspects_then_the_rest(
    state: EndpointState | None, expected: int
) -> None:
    assert priority_of(state) == expected


def test_a_control_comes_first_and_an_excluded_endpoint_last() -> None:
    suspect = EndpointState("m", "t", streaks=(Streak(Contract.ttft, 1),))
    assert priority_of(None, control=True) == CONTROL
    assert priority_of(suspect, excluded=True) == EXCLUDED
    quarantined = EndpointState("m", "t", quarantined_until=datetime(2026, 1, 2, tzinfo=UTC))
    assert priority_of(quarantined, excluded=True) == 0


def test_the_budget_never_skips_a_control() -> None:
    candidates = [
        BudgetCandidate("m", "control", CONTROL, 5.0),
        BudgetCandidate("m", "q", 0, 0.5),
        BudgetCandidate("m", "rest", 2, 0.5),
    ]
    plan = plan_budget(candidates, 1.0, rng_seed=3)
    assert plan.probe[0] == ("m", "control")
    assert [t for _, t, _ in plan.skipped] == ["q", "rest"]


def test_excluded_endpoints_are_sampled_after_the_rest() -> None:
    candidates = [
        BudgetCandidate("m", "x", EXCLUDED, 1.0),
        BudgetCandidate("m", "r", 2, 1.0),
    ]
    plan = plan_budget(candidates, 1.5, rng_seed=3)
    assert plan.probe == (("m", "r"),)
    assert "excluded endpoint" in plan.skipped[0][2]
