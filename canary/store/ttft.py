"""The rows of the latency histograms (``ttft_buckets``) that a batch of samples adds up to."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from canary.core.stats import latency_bucket


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def bucket_rows(samples: Iterable[tuple[str, str, datetime, float]]) -> list[dict[str, Any]]:
    """(model, tag, at, seconds) samples -> one row per (model, tag, hour, bucket) with its count
    and largest sample; samples that are not durations are left out."""
    rows: dict[tuple[str, str, datetime, int], dict[str, Any]] = {}
    for model, tag, at, seconds in samples:
        bucket = latency_bucket(seconds)
        if bucket is None:
            continue
        key = (model, tag, hour_of(at), bucket)
        row = rows.get(key)
        if row is None:
            rows[key] = {
                "model": model, "tag": tag, "hour": key[2], "bucket": bucket,
                "n": 1, "top": seconds,
            }  # fmt: skip
        else:
            row["n"] += 1
            row["top"] = max(row["top"], seconds)
    return list(rows.values())
