"""The latency read model against known inputs (pure: no store)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from canary.core.stats import histogram_of, window_figures
from canary.views.latency import Latency
from canary.views.latency import latencies as latencies_of_figures

BOUND = 5.0


def latencies(
    day: dict[str, list[float]],
    week: dict[str, list[float]],
    advertised: dict[str, Any],
    tags: list[str],
    bound: float,
    recent: dict[str, list[float]] | None = None,
) -> dict[str, Latency]:
    """The pure read model fed with raw samples, binned and summed up as the store does."""
    return latencies_of_figures(
        {tag: window_figures(histogram_of(v)) for tag, v in day.items()},
        {tag: window_figures(histogram_of(v)) for tag, v in week.items()},
        advertised,
        tags,
        bound,
        recent,
    )


def test_percentiles_are_nearest_rank_over_each_window() -> None:
    day = {"a": [float(v) for v in range(1, 21)]}  # 1..20 s
    week = {"a": [float(v) for v in range(1, 101)]}  # 1..100 s
    lat = latencies(day, week, {}, ["a"], BOUND)["a"]
    assert lat.day == {"p50": 10.0, "p95": 19.0, "p99": 20.0, "n": 20}
    # 99 and 100 s share a 2 % bucket, which reports its largest sample
    assert lat.week == {"p50": 50.0, "p95": 95.0, "p99": 100.0, "n": 100}


@pytest.mark.parametrize(
    ("samples", "state"),
    [
        ([1.0] * 19 + [9.0], "healthy"),  # one slow sample in 20: p95 is still 1 s
        ([1.0] * 18 + [9.0, 9.0], "degraded"),  # two in 20: p95 is 9 s > 5 s
        ([5.0], "healthy"),  # at the bound is not over it
        ([], "unknown"),
    ],
)
def test_the_state_is_the_24h_p95_against_the_bound(samples: list[float], state: str) -> None:
    lat = latencies({"a": samples} if samples else {}, {}, {}, ["a"], BOUND)["a"]
    assert lat.state == state


def test_the_state_ignores_the_week_only_the_last_24h_count() -> None:
    lat = latencies({"a": [1.0]}, {"a": [30.0] * 50 + [1.0]}, {}, ["a"], BOUND)["a"]
    assert lat.state == "healthy" and lat.week["p95"] == 30.0


def test_peers_are_the_median_of_the_other_endpoints_24h_p95() -> None:
    day = {"a": [1.0], "b": [2.0], "c": [4.0], "slow": [9.0]}
    out = latencies(day, {}, {}, [*day, "silent"], BOUND)
    assert out["slow"].peers_p95_24h_s == 2.0 and out["slow"].peers_n == 3
    assert out["a"].peers_p95_24h_s == 4.0  # median of 2, 4, 9
    assert out["silent"].state == "unknown" and out["silent"].peers_n == 4
    assert latencies({"a": [1.0]}, {}, {}, ["a"], BOUND)["a"].peers_p95_24h_s is None


@given(
    st.dictionaries(
        st.sampled_from("abcdefghij"),
        st.one_of(st.none(), st.sampled_from([0.5, 1.0, 1.0, 2.5, 9.0])),  # ties on purpose
        max_size=10,
    )
)
def test_peers_are_every_other_endpoint_whatever_the_ties(p95_of: dict[str, float | None]) -> None:
    """Each endpoint's peers are the other endpoints with a 24 h p95, one value each, equal
    values included: the median of exactly those, however many share this one's value."""
    day = {
        t: {"p50": p95, "p95": p95, "p99": p95, "n": 0 if p95 is None else 5}
        for t, p95 in p95_of.items()
    }
    out = latencies_of_figures(day, {}, {}, list(p95_of), BOUND)
    for tag, lat in out.items():
        others = [float(v) for t, v in p95_of.items() if t != tag and v is not None]
        assert lat.peers_n == len(others)
        assert lat.peers_p95_24h_s == (round(statistics.median(others), 3) if others else None)


def test_openrouter_figures_come_from_the_snapshot_in_ms() -> None:
    advertised = {"a": {"latency_last_30m": {"p50": 640, "p99": 4000}}, "b": {}}
    out = latencies({}, {}, advertised, ["a", "b"], BOUND)
    assert out["a"].openrouter_ms == {"p50": 640, "p99": 4000}
    assert out["b"].openrouter_ms is None
    assert out["a"].as_json()["openrouter_last_30m_ms"] == {"p50": 640, "p99": 4000}


def test_the_sparkline_keeps_the_latest_forty_samples_oldest_first() -> None:
    samples = [float(v) for v in range(50)]
    out = latencies({"a": samples}, {}, {}, ["a", "b"], BOUND, {"a": samples})
    assert out["a"].spark == tuple(samples[10:]) and out["b"].spark == ()


def test_stored_figures_stand_until_their_window_has_wholly_passed() -> None:
    from datetime import UTC, datetime, timedelta

    from canary.store.rows import WindowFigures
    from canary.views.latency import current

    at = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    stored = WindowFigures(at, 3, 1.0, 2.0, 2.0)
    assert current(stored, "24h", at + timedelta(hours=23, minutes=59)) == stored.as_dict()
    assert current(stored, "24h", at + timedelta(hours=24)) is None
    assert current(stored, "7d", at + timedelta(days=6)) == stored.as_dict()
    assert current(stored, "7d", at + timedelta(days=7)) is None
    assert current(None, "24h", at) is None
