"""OpenRouter's JSON shapes, built from the simulator's state (see openrouter-api.md)."""

from __future__ import annotations

from pydantic import JsonValue

from canary.sim.scenario import Provider
from canary.sim.state import ModelState

USER_ID = "user_sim"


def per_token(per_million: float) -> str:
    """USD per million tokens -> OpenRouter's USD-per-token decimal string."""
    text = f"{per_million / 1_000_000:.12f}".rstrip("0").rstrip(".")
    return text or "0"


def _percentiles(p50: float, spread: tuple[float, float, float]) -> dict[str, JsonValue]:
    return {
        "p50": round(p50, 1),
        "p75": round(p50 * spread[0], 1),
        "p90": round(p50 * spread[1], 1),
        "p99": round(p50 * spread[2], 1),
    }


def endpoint_json(model: ModelState, p: Provider) -> dict[str, JsonValue]:
    params: list[JsonValue] = list(p.supported_parameters)
    latency: dict[str, JsonValue] = (
        p.latency_last_30m.model_dump()
        if p.latency_last_30m
        else _percentiles(p.ttft_ms + 40, (1.3, 1.8, 3.5))
    )
    throughput: dict[str, JsonValue] = (
        p.throughput_last_30m.model_dump()
        if p.throughput_last_30m
        else _percentiles(p.tokens_per_second, (0.85, 0.7, 0.4))
    )
    tool_choice = "tool_choice" in params
    return {
        "name": f"{p.name} | {model.spec.id}",
        "model_id": model.spec.id,
        "model_name": model.spec.name,
        "context_length": p.context_length,
        "pricing": {
            "prompt": per_token(p.price.prompt),
            "completion": per_token(p.price.completion),
        },
        "provider_name": p.name,
        "tag": p.tag,
        "quantization": p.quantization,
        "max_completion_tokens": p.max_completion_tokens,
        "max_prompt_tokens": p.max_prompt_tokens,
        "supported_parameters": params,
        "status": p.status,
        "uptime_last_5m": p.uptime_last_5m,
        "uptime_last_30m": p.uptime_last_30m,
        "uptime_last_1d": p.uptime_last_1d,
        "latency_last_30m": latency,
        "throughput_last_30m": throughput,
        "supports_implicit_caching": p.supports_implicit_caching,
        "native_tools": {},
        "service_tier": p.service_tier,
        "supports_diarization": False,
        "supports_tool_choice": {
            "auto": tool_choice,
            "none": tool_choice,
            "required": tool_choice,
            "function": tool_choice,
        },
    }


def _architecture() -> dict[str, JsonValue]:
    return {
        "input_modalities": ["text"],
        "output_modalities": ["text"],
        "modality": "text->text",
        "tokenizer": "Other",
        "instruct_type": None,
    }


def endpoints_json(model: ModelState) -> dict[str, JsonValue]:
    return {
        "data": {
            "id": model.spec.id,
            "name": model.spec.name,
            "created": model.spec.created,
            "description": model.spec.description,
            "architecture": _architecture(),
            "endpoints": [endpoint_json(model, p) for p in model.providers.values()],
        }
    }


def model_json(model: ModelState, root_url: str) -> dict[str, JsonValue]:
    providers = list(model.providers.values())
    cheapest = min(providers, key=lambda p: (p.price.prompt, p.price.completion), default=None)
    params: list[JsonValue] = [*sorted({x for p in providers for x in p.supported_parameters})]
    context = max((p.context_length for p in providers), default=None)
    return {
        "id": model.spec.id,
        "canonical_slug": model.spec.id,
        "hugging_face_id": None,
        "name": model.spec.name,
        "created": model.spec.created,
        "description": model.spec.description,
        "context_length": context,
        "architecture": _architecture(),
        "pricing": {
            "prompt": per_token(cheapest.price.prompt if cheapest else 0),
            "completion": per_token(cheapest.price.completion if cheapest else 0),
        },
        "top_provider": {
            "context_length": cheapest.context_length if cheapest else None,
            "max_completion_tokens": cheapest.max_completion_tokens if cheapest else None,
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": params,
        "default_parameters": None,
        "supported_voices": None,
        "links": {"details": f"{root_url}/api/v1/models/{model.spec.id}/endpoints"},
    }


def providers_json(models: list[ModelState]) -> dict[str, JsonValue]:
    seen: dict[str, str] = {}
    for m in models:
        for p in m.providers.values():
            seen.setdefault(p.slug, p.name)
    return {
        "data": [
            {
                "name": name,
                "slug": slug,
                "privacy_policy_url": None,
                "terms_of_service_url": None,
                "status_page_url": None,
            }
            for slug, name in sorted(seen.items())
        ]
    }


def error_body(
    code: int, message: str, metadata: dict[str, JsonValue] | None = None
) -> dict[str, JsonValue]:
    error: dict[str, JsonValue] = {"code": code, "message": message}
    if metadata is not None:
        error["metadata"] = metadata
    return {"error": error, "user_id": USER_ID}


ERROR_TYPES = {
    400: "invalid_request",
    401: "authentication",
    402: "payment_required",
    403: "permission_denied",
    404: "not_found",
    408: "timeout",
    413: "payload_too_large",
    422: "unprocessable",
    429: "rate_limit_exceeded",
    500: "server",
    502: "provider_unavailable",
    503: "provider_overloaded",
    504: "timeout",
}


def error_type(code: int) -> str:
    return ERROR_TYPES.get(code, "server" if code >= 500 else "invalid_request")


KEEPALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"


def generation_json(entry: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """``GET /generation``'s ``data`` from an answer's log entry: who served it, and how."""
    return {
        "id": entry.get("id"),
        "model": entry.get("model"),
        "provider_name": entry.get("provider_name"),
        "latency": entry.get("planned_ms"),
        "finish_reason": entry.get("finish_reason"),
        "native_finish_reason": entry.get("finish_reason"),
        "tokens_completion": entry.get("completion_tokens"),
    }
