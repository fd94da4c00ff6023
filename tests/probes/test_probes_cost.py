"""probe_cost and estimate_round_cost: reported cost first, prices otherwise."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from canary.core.cost import estimate_round_cost, probe_cost
from canary.core.model import Endpoint, Pricing, Usage

PRICING = Pricing(prompt=0.000001, completion=0.000004)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (Usage(prompt_tokens=100, completion_tokens=50, cost_usd=0.0123), 0.0123),  # reported wins
        (Usage(prompt_tokens=100, completion_tokens=50), 100 * 0.000001 + 50 * 0.000004),
        (Usage(prompt_tokens=100), 0.0001),
        (Usage(), 0.0),
        (Usage(cost_usd=0.0), 0.0),
    ],
)
def test_probe_cost(usage: Usage, expected: float) -> None:
    assert probe_cost(usage, PRICING) == pytest.approx(expected)


def test_negative_prices_count_as_zero() -> None:
    assert probe_cost(Usage(prompt_tokens=10, completion_tokens=10), Pricing(-1, -1)) == 0.0


def test_estimate_round_cost_sums_endpoints(endpoint_of: Callable[..., Endpoint]) -> None:
    cheap = endpoint_of(tag="a", pricing=Pricing(0.000001, 0.000002))
    dear = endpoint_of(tag="b", pricing=Pricing(0.00001, 0.00002))
    per_probe = 250 * 0.000001 + 400 * 0.000002 + 250 * 0.00001 + 400 * 0.00002
    assert estimate_round_cost([cheap, dear], 5, 250, 400) == pytest.approx(5 * per_probe)
    assert estimate_round_cost([], 5, 250, 400) == 0.0


def test_estimate_round_cost_accepts_a_count_per_endpoint(
    endpoint_of: Callable[..., Endpoint],
) -> None:
    a = endpoint_of(tag="a", pricing=Pricing(0.000001, 0.0))
    b = endpoint_of(tag="b", pricing=Pricing(0.000001, 0.0))
    counts = {"a": 5, "b": 7}
    total = estimate_round_cost([a, b], lambda e: counts[e.tag], 1000, 0)
    assert total == pytest.approx(12 * 1000 * 0.000001)
