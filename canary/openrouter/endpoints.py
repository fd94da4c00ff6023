"""``GET /models/{author}/{slug}/endpoints`` body -> :class:`Endpoint` list. Pure.

Tolerates every shape seen on the wire since 2025 (``../shared/fixtures/openrouter/endpoints``):

- no ``tag`` (before late May 2025): the tag falls back to a slug of ``provider_name``
  (``"Google AI Studio"`` -> ``"google-ai-studio"``);
- ``null`` for quantization, limits, uptime and latency; pricing as strings (USD per token),
  numbers, or absent (a missing or unreadable price reads as 0.0);
- entries that are not objects, or that name neither a tag nor a provider, are skipped.

**Duplicate tags** (two ``deepseek`` endpoints in the 2025-08-30 capture): a tag is what a probe
pins, so it is one routing target and yields one :class:`Endpoint`. Among the entries that share
a tag we keep the one whose *static* fields (everything except the volatile health figures
``status``, ``uptime_*``, ``latency_*`` and ``throughput_*``) serialise first as canonical JSON
(sorted keys). The choice therefore depends neither on the listing order nor on health figures
that move between fetches. The result is sorted by tag.
"""

from __future__ import annotations

import json
import math
import re

from pydantic import JsonValue

from canary.core.model import Endpoint, Pricing
from canary.openrouter.shapes import JSONObject, as_object

_VOLATILE_PREFIXES = ("uptime_", "latency_", "throughput_")
_VOLATILE_KEYS = frozenset({"status"})
_SLUG = re.compile(r"[^a-z0-9]+")


class EndpointsPayloadError(ValueError):
    """The body is not an endpoints listing (no ``data.endpoints`` list)."""


def slugify(name: str) -> str:
    """``"Google AI Studio"`` -> ``"google-ai-studio"``."""
    return _SLUG.sub("-", name.lower()).strip("-")


def _float(value: JsonValue) -> float | None:
    if not isinstance(value, (int, float, str)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # drop NaN and ±inf (`1e400` reads as inf)


def _int(value: JsonValue) -> int | None:
    number = _float(value)
    return int(number) if number is not None else None


def _latency(value: JsonValue) -> dict[str, float] | None:
    if not isinstance(value, dict):
        return None
    out = {str(k): f for k, v in value.items() if (f := _float(v)) is not None}
    return out or None


def _static_key(raw: JSONObject) -> str:
    static = {
        k: v
        for k, v in raw.items()
        if k not in _VOLATILE_KEYS and not k.startswith(_VOLATILE_PREFIXES)
    }
    return json.dumps(static, sort_keys=True, ensure_ascii=False, default=str)


def parse_endpoint(model_id: str, raw: JSONObject) -> Endpoint | None:
    """One endpoint object, or None when it names neither a tag nor a provider."""
    provider_name = raw.get("provider_name")
    provider_name = provider_name.strip() if isinstance(provider_name, str) else ""
    tag = raw.get("tag")
    tag = tag.strip() if isinstance(tag, str) else ""
    if not tag:
        tag = slugify(provider_name)
    if not tag:
        return None
    pricing = as_object(raw.get("pricing")) or {}
    parameters = raw.get("supported_parameters")
    return Endpoint(
        model=model_id,
        tag=tag,
        provider_name=provider_name or tag,
        pricing=Pricing(
            prompt=_float(pricing.get("prompt")) or 0.0,
            completion=_float(pricing.get("completion")) or 0.0,
        ),
        supported_parameters=tuple(p for p in parameters if isinstance(p, str))
        if isinstance(parameters, list)
        else (),
        quantization=q if isinstance(q := raw.get("quantization"), str) else None,
        context_length=_int(raw.get("context_length")),
        max_completion_tokens=_int(raw.get("max_completion_tokens")),
        status=_int(raw.get("status")),
        uptime_last_30m=_float(raw.get("uptime_last_30m")),
        latency_last_30m=_latency(raw.get("latency_last_30m")),
        throughput_last_30m=_latency(raw.get("throughput_last_30m")),
        service_tier=tier if isinstance(tier := raw.get("service_tier"), str) and tier else None,
        raw=raw,
    )


def parse_endpoints(model_id: str, payload: JSONObject) -> list[Endpoint]:
    """Every endpoint of ``model_id`` in a listing body, one per tag, sorted by tag."""
    data = as_object(payload.get("data"))
    entries = data.get("endpoints") if data is not None else None
    if not isinstance(entries, list):
        raise EndpointsPayloadError("the endpoints listing has no data.endpoints list")
    chosen: dict[str, tuple[str, Endpoint]] = {}
    for raw in entries:
        if not isinstance(raw, dict):
            continue
        endpoint = parse_endpoint(model_id, raw)
        if endpoint is None:
            continue
        key = _static_key(raw)
        current = chosen.get(endpoint.tag)
        if current is None or key < current[0]:
            chosen[endpoint.tag] = (key, endpoint)
    return [chosen[tag][1] for tag in sorted(chosen)]
