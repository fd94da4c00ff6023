"""Nearest-rank percentiles of time to first token."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from canary.core.stats import (
    BUCKET_RATIO,
    histogram_of,
    histogram_percentiles,
    latency_bucket,
    percentiles,
)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([float(v) for v in range(1, 11)], {"p50": 5.0, "p95": 10.0, "p99": 10.0}),
        ([float(v) for v in range(1, 101)], {"p50": 50.0, "p95": 95.0, "p99": 99.0}),
        ([float(v) for v in range(100, 0, -1)], {"p50": 50.0, "p95": 95.0, "p99": 99.0}),
        ([3.5], {"p50": 3.5, "p95": 3.5, "p99": 3.5}),
        ([], {"p50": None, "p95": None, "p99": None}),
        ([1.0, math.nan, 2.0], {"p50": 1.0, "p95": 2.0, "p99": 2.0}),
        # one slow answer in twenty shows at p95 only with nearest rank
        ([1.0] * 19 + [12.4], {"p50": 1.0, "p95": 1.0, "p99": 12.4}),
    ],
)
def test_percentiles(values: list[float], expected: dict[str, float | None]) -> None:
    assert percentiles(values) == expected


def test_custom_quantiles_and_keys() -> None:
    values = [float(v) for v in range(1, 1001)]
    assert percentiles(values, (0, 7, 99.9, 100)) == {
        "p0": 1.0, "p7": 70.0, "p99.9": 999.0, "p100": 1000.0,
    }  # fmt: skip


def test_quantile_outside_range_is_refused() -> None:
    with pytest.raises(ValueError, match="101"):
        percentiles([1.0], (101,))


durations = st.lists(
    st.floats(min_value=0.0, max_value=600.0, allow_nan=False), min_size=1, max_size=300
)


@given(durations)
def test_a_histogram_percentile_is_a_sample_at_most_two_percent_over_the_exact_one(
    values: list[float],
) -> None:
    exact = percentiles(values, (1, 50, 95, 99, 100))
    binned = histogram_percentiles(histogram_of(values), (1, 50, 95, 99, 100))
    for key, value in exact.items():
        assert value is not None
        assert binned[key] in values
        assert value <= binned[key] <= max(value * BUCKET_RATIO, 1e-4 * BUCKET_RATIO)


def test_histograms_add_up_and_skip_what_is_not_a_duration() -> None:
    histogram = histogram_of([1.0, 1.005, 2.0, math.nan, math.inf, -1.0])
    assert sum(n for n, _ in histogram.values()) == 3
    assert histogram[latency_bucket(1.0)] == (2, 1.005)  # one bucket, its largest kept
    assert latency_bucket(-0.1) is None and latency_bucket(math.nan) is None
    assert histogram_percentiles({}) == {"p50": None, "p95": None, "p99": None}
