"""Tail statistics for time to first token. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
    out: dict[str, float | None] = {}
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError(f"percentile {q} is outside 0..100")
        key = f"p{int(q)}" if float(q).is_integer() else f"p{q}"
        if not clean:
            out[key] = None
            continue
        rank = max(1, math.ceil(round(q * len(clean) / 100, 9)))  # round: 7 * 100 / 100 is 7
        out[key] = clean[rank - 1]
    return out
