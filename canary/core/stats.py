"""Tail statistics for time to first token. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import timedelta


def percentiles(
    values: Sequence[float], qs: Sequence[float] = (50, 95, 99)
) -> dict[str, float | None]:
    """Nearest-rank percentiles: ``{"p50": ..., "p95": ..., "p99": ...}``.

    The q-th percentile is the smallest observed value with at least q % of the values at or
    below it (rank ``ceil(q / 100 * n)``, at least 1), so every figure is a real measurement.
    NaN values are ignored; with no values every percentile is None. Keys drop a ``.0``
    (``p99.9`` stays as written).
    """
    clean = sorted(v for v in values if not math.isnan(v))
    return {_key(q): clean[_rank(q, len(clean)) - 1] if clean else None for q in _checked(qs)}


def _checked(qs: Sequence[float]) -> Sequence[float]:
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError(f"percentile {q} is outside 0..100")
    return qs


def _key(q: float) -> str:
    return f"p{int(q)}" if float(q).is_integer() else f"p{q}"


def _rank(q: float, n: int) -> int:
    """The nearest rank (1-based) of the q-th percentile of n values."""
    return max(1, math.ceil(round(q * n / 100, 9)))  # round: 7 * 100 / 100 is 7


# Latency histograms: the store keeps time-to-first-token samples as counts per bucket (and per
# hour), so the 24 h and 7 d figures of every endpoint are read from a few hundred rows however
# many probes ran. A bucket is 2 % wide; it keeps the largest sample that fell in it, and that
# is the figure a percentile landing in the bucket reports: still a measured sample, at most 2 %
# above the exact nearest-rank value.
BUCKET_RATIO = 1.02
_LOG_RATIO = math.log(BUCKET_RATIO)
_FLOOR_S = 1e-4  # 0.1 ms: every faster sample shares the lowest bucket


def latency_bucket(seconds: float) -> int | None:
    """The bucket of a sample; None for a sample that is not a duration (NaN, inf, negative)."""
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return math.floor(math.log(max(seconds, _FLOOR_S)) / _LOG_RATIO)


Histogram = dict[int, tuple[int, float]]  # bucket -> (samples, the largest of them)


def histogram_of(samples: Sequence[float]) -> Histogram:
    """The histogram of raw samples (what the store accumulates, for tests and small inputs)."""
    out: Histogram = {}
    for value in samples:
        bucket = latency_bucket(value)
        if bucket is not None:
            n, top = out.get(bucket, (0, value))
            out[bucket] = (n + 1, max(top, value))
    return out


def histogram_percentiles(
    histogram: Mapping[int, tuple[int, float]], qs: Sequence[float] = (50, 95, 99)
) -> dict[str, float | None]:
    """Nearest-rank percentiles over a histogram: the rank ``ceil(q / 100 * n)`` as in
    :func:`percentiles`, reported as the largest sample of the bucket that holds it."""
    ordered = sorted((b, n, top) for b, (n, top) in histogram.items() if n > 0)
    total = sum(n for _, n, _ in ordered)
    out: dict[str, float | None] = {}
    for q in _checked(qs):
        out[_key(q)] = _at_rank(ordered, _rank(q, total)) if total else None
    return out


def _at_rank(ordered: Sequence[tuple[int, int, float]], rank: int) -> float | None:
    seen = 0
    for _, n, top in ordered:
        seen += n
        if seen >= rank:
            return top
    return None


# The windows of the latency figures, by name.
LATENCY_WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}


def window_figures(histogram: Mapping[int, tuple[int, float]]) -> dict[str, float | int | None]:
    """``{p50, p95, p99, n}`` of one window's histogram (percentiles None without samples)."""
    n = sum(count for count, _ in histogram.values())
    return {**histogram_percentiles(histogram, (50, 95, 99)), "n": n}
