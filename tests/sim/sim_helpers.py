"""Wire helpers for the simulator tests: request bodies and SSE parsing."""

from __future__ import annotations

import json
from typing import Any

MODEL = "acme/roleplay-1"


def pin(tag: str) -> dict[str, Any]:
    return {"only": [tag], "order": [tag], "allow_fallbacks": False}


def body(
    text: str = "Continue the scene in the tavern, please.",
    *,
    stream: bool = True,
    provider: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": text}],
        "stream": stream,
        **extra,
    }
    if provider is not None:
        out["provider"] = provider
    return out


def events(raw: str) -> list[dict[str, Any]]:
    """The JSON events of an SSE body (comments skipped, [DONE] excluded)."""
    lines = [line for block in raw.split("\n\n") for line in block.splitlines()]
    return [json.loads(x[6:]) for x in lines if x.startswith("data: ") and x != "data: [DONE]"]


def content(evs: list[dict[str, Any]]) -> str:
    return "".join((c["delta"].get("content") or "") for e in evs for c in e.get("choices", []))


def finish(evs: list[dict[str, Any]]) -> str | None:
    reasons = [c["finish_reason"] for e in evs for c in e.get("choices", []) if c["finish_reason"]]
    return reasons[-1] if reasons else None
