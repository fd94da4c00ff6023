"""The equality check's latest results as operators see them (advisory: an outlier's answers
differ from its peers'; an operator decides, with ``exclude add``): one line per model for the
status page and ``canary status``, and the JSON shape of each result."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.store._equality import EqualityRecord
from canary.views.records import Time, answer, iso


@answer
class EqualityJson(TypedDict):
    """An endpoint's latest equality check (advisory: docs/equality.md)."""

    tag: str
    at: Time
    result: Annotated[str, Field(description="pass, fail or inconclusive")]
    p_value: Annotated[float | None, Field(description="the MMD's permutation p-value")]
    known_p_value: Annotated[
        float | None, Field(description="the known answers' Fisher exact p-value")
    ]
    effect: Annotated[float | None, Field(description="MMD squared, mean over prompts (0: alike)")]
    peers: int
    samples: int
    pooled: Annotated[bool, Field(description="whether its answers joined its peers' reference")]
    reason: str
    examples: list[str]
    settings: dict[str, JsonValue]


def equality_json(r: EqualityRecord) -> EqualityJson:
    return {
        "tag": r.tag,
        "at": iso(r.at),
        "result": r.result,
        "p_value": r.p_value,
        "known_p_value": r.known_p_value,
        "effect": r.effect,
        "peers": r.peers,
        "samples": r.samples,
        "pooled": r.pooled,
        "reason": r.reason,
        "examples": list(r.examples),
        "settings": r.settings,
    }


def equality_line(records: list[EqualityRecord]) -> str:
    """``equality (advisory, <latest>): 1 outlier of 5 tested: delta (distribution, p=0.0005)``."""
    if not records:
        return "equality (advisory): not checked yet"
    latest = max(r.at for r in records)
    fails = [r for r in records if r.result == "fail"]
    counts = {k: sum(r.result == k for r in records) for k in ("pass", "inconclusive")}
    head = f"equality (advisory, {iso(latest)}): {len(fails)} outlier(s) of {len(records)} tested"
    named = [f"{r.tag} ({r.reason}, p={_p(r)})" for r in fails]
    tail = f"; {counts['pass']} like their peers, {counts['inconclusive']} inconclusive"
    return head + (": " + ", ".join(named) if named else "") + tail


def _p(r: EqualityRecord) -> str:
    values = [p for p in (r.p_value, r.known_p_value) if p is not None]
    return f"{min(values):.2g}" if values else "-"
