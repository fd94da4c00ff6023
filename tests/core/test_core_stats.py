"""Nearest-rank percentiles of time to first token."""

from __future__ import annotations

import math

import pytest

from canary.core.stats import percentiles


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
