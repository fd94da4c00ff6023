"""The rows of the latency histograms (``ttft_buckets``) that a batch of samples adds up to."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from canary.core.stats import histogram_of


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def bucket_rows(samples: Iterable[tuple[str, str, datetime, float]]) -> list[dict[str, Any]]:
    """(model, tag, at, seconds) samples -> one row per (model, tag, hour, bucket) with its count
    and largest sample; samples that are not durations are left out."""
    by_hour: dict[tuple[str, str, datetime], list[float]] = {}
    for model, tag, at, seconds in samples:
        by_hour.setdefault((model, tag, hour_of(at)), []).append(seconds)
    return [
        {"model": model, "tag": tag, "hour": hour, "bucket": bucket, "n": n, "top": top}
        for (model, tag, hour), values in by_hour.items()
        for bucket, (n, top) in histogram_of(values).items()
    ]
