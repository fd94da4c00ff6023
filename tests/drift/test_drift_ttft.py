"""Time-to-first-token figures of a window: percentiles checked against known inputs, and the
healthy/degraded/unknown state."""

from __future__ import annotations

import math

import pytest

from canary.core.drift import ttft_state
from canary.core.stats import histogram_of, window_figures


def ttft_health(samples: list[float], **kw: float) -> tuple[str, dict[str, float | int | None]]:
    figures = window_figures(histogram_of(samples))
    return ttft_state(figures, **kw), figures  # type: ignore[arg-type]


def test_percentiles_of_one_to_hundred() -> None:
    state, figures = ttft_health([float(v) for v in range(1, 101)], bound_p95_s=200)
    assert state == "healthy"
    assert figures["n"] == 100
    # Nearest rank: the smallest sample with at least q % of the samples at or below it.
    assert (figures["p50"], figures["p95"]) == (50.0, 95.0)
    assert figures["p99"] == 100.0  # 99 and 100 share a 2 % bucket, which reports its largest


def test_order_of_samples_does_not_matter() -> None:
    _, a = ttft_health([3.0, 1.0, 2.0, 10.0], bound_p95_s=5)
    _, b = ttft_health([10.0, 2.0, 1.0, 3.0], bound_p95_s=5)
    assert a == b
    assert a["p50"] == 2.0 and a["p99"] == 10.0


def test_single_sample_is_every_percentile() -> None:
    _, figures = ttft_health([0.8], bound_p95_s=5)
    assert figures == {"p50": 0.8, "p95": 0.8, "p99": 0.8, "n": 1}


def test_p95_over_the_bound_is_degraded() -> None:
    samples = [0.5] * 18 + [12.0, 14.0]  # a slow tail: the 19th of 20 is 12.0
    state, figures = ttft_health(samples, bound_p95_s=5)
    assert state == "degraded"
    assert figures["p50"] == pytest.approx(0.5)
    assert figures["p95"] == 12.0


def test_p95_exactly_at_the_bound_is_healthy() -> None:
    state, _ = ttft_health([5.0] * 10, bound_p95_s=5)
    assert state == "healthy"


def test_one_slow_answer_among_many_stays_healthy() -> None:
    state, figures = ttft_health([0.5] * 99 + [30.0], bound_p95_s=5)
    assert state == "healthy"
    assert figures["p95"] == figures["p99"] == 0.5  # the 99th of 100 samples


def test_no_samples_is_unknown() -> None:
    assert ttft_health([], bound_p95_s=5) == (
        "unknown",
        {"p50": None, "p95": None, "p99": None, "n": 0},
    )


def test_fewer_than_min_samples_is_unknown_but_figures_are_given() -> None:
    state, figures = ttft_health([20.0, 30.0], bound_p95_s=5, min_samples=3)
    assert state == "unknown"
    assert figures["n"] == 2 and figures["p50"] == 20.0 and figures["p95"] == 30.0


def test_non_finite_and_negative_samples_are_ignored() -> None:
    state, figures = ttft_health([1.0, math.nan, math.inf, -1.0, 3.0], bound_p95_s=5)
    assert state == "healthy"
    assert figures["n"] == 2 and (figures["p50"], figures["p99"]) == (1.0, 3.0)
