"""Builders for drill tests: fast simulated providers, scenarios as dicts, one language pair.

Every drill here uses the same two languages so lingua's detectors are built once per process.
Providers answer in a few milliseconds at thousands of tokens per second, so a round of a
handful of endpoints takes a fraction of a second.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlite_template import migrated_sqlite

from canary.config.settings import ModelSettings, Settings
from canary.rounds.drill import DRILL_START, DrillResult, run_drill

MODEL = "acme/drill-1"
TPS = 50000
LANGUAGES = ("en", "es")
TEXT_ONLY = ["max_tokens", "temperature", "seed"]  # no response_format: no schema probe


def provider(tag: str, *faults: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"tag": tag, "ttft_ms": 5, "tokens_per_second": TPS, "faults": list(faults), **fields}


def fault(kind: str, **params: Any) -> dict[str, Any]:
    return {"kind": kind, **params}


def faults_at(round_no: int, tag: str, *faults: dict[str, Any]) -> dict[str, Any]:
    """A timeline entry: from round `round_no` on, `tag` has exactly these faults."""
    return {"round": round_no, "model": MODEL, "provider": tag, "faults": list(faults)}


def advance(round_no: int, hours: float) -> dict[str, Any]:
    return {"round": round_no, "advance_hours": hours}


def scenario(
    *providers: dict[str, Any], timeline: Iterable[dict[str, Any]] = (), seed: int = 11
) -> dict[str, Any]:
    return {
        "seed": seed,
        "models": [{"id": MODEL, "providers": list(providers)}],
        "timeline": list(timeline),
    }


def settings(*, model: ModelSettings | None = None, **changes: Any) -> Settings:
    base: dict[str, Any] = {
        "languages": LANGUAGES,
        "models": (model or ModelSettings(id=MODEL),),
    }
    return Settings(**{**base, **changes})


def drill(
    scenario_: dict[str, Any],
    rounds: int,
    *,
    mode: str = "enforce",
    base: Settings | None = None,
    database_url: str | None = None,
    start: datetime = DRILL_START,
) -> DrillResult:
    with tempfile.TemporaryDirectory(prefix="canary-drill-") as folder:
        # without a store of its own, a copy of a migrated one (as fresh, without migrating)
        url = database_url or migrated_sqlite(Path(folder) / "drill.db")
        return asyncio.run(
            run_drill(
                scenario_, rounds, base or settings(), mode=mode, database_url=url, start=start
            )
        )


def rounds_of(result: DrillResult, kind: str, tag: str | None = None) -> list[int]:
    """The rounds in which an event of `kind` (for `tag`, when given) was emitted."""
    return [
        e["round"]
        for e in result.events
        if e["event"] == kind and (tag is None or e.get("provider") == tag)
    ]


def verdicts(result: DrillResult, tag: str) -> list[str]:
    """`tag`'s verdict per round, in round order."""
    return [
        e["verdict"]
        for e in sorted(result.of_kind("verdict"), key=lambda e: e["round"])
        if e["provider"] == tag
    ]


def verdict_line(result: DrillResult, round_no: int, tag: str) -> dict[str, Any]:
    (line,) = [
        e for e in result.of_kind("verdict") if e["round"] == round_no and e["provider"] == tag
    ]
    return line


def ignored(result: DrillResult) -> list[str]:
    return list(result.summary["ignore"][MODEL])
