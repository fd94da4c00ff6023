"""The `provider` routing object: which endpoints may answer a request, in which order."""

from __future__ import annotations

from pydantic import JsonValue

from canary.sim.scenario import Provider

# Request keys that are optional parameters an endpoint may or may not support.
OPTIONAL_PARAMETERS = frozenset({
    "max_tokens", "temperature", "top_p", "top_k", "stop", "seed", "frequency_penalty",
    "presence_penalty", "repetition_penalty", "min_p", "top_a", "logit_bias", "logprobs",
    "top_logprobs", "response_format", "tools", "tool_choice", "reasoning", "include_reasoning",
    "parallel_tool_calls", "verbosity",
})  # fmt: skip
_DOCS = "To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing"


class Unroutable(Exception):
    """No endpoint satisfies the request's routing requirements."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def sent_parameters(body: dict[str, JsonValue]) -> set[str]:
    sent = {k for k in body if k in OPTIONAL_PARAMETERS and body[k] is not None}
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        sent.add("structured_outputs")
    return sent


def matches(ident: JsonValue, p: Provider) -> bool:
    """A full tag names one endpoint; a base slug names every non-tier endpoint of it."""
    if not isinstance(ident, str):
        return False
    return ident == p.tag or (ident == p.slug and p.service_tier is None)


def as_list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def route(providers: list[Provider], prefs: dict[str, JsonValue], sent: set[str]) -> list[Provider]:
    """The endpoints to try, in order. Raises Unroutable (404) when none is left."""
    candidates = list(providers)
    quants = as_list(prefs.get("quantizations"))
    if quants:
        candidates = [p for p in candidates if p.quantization in quants]
    only = prefs.get("only")
    if only is not None:
        candidates = [p for p in candidates if any(matches(i, p) for i in as_list(only))]
    ignore = as_list(prefs.get("ignore"))
    candidates = [p for p in candidates if not any(matches(i, p) for i in ignore)]
    max_price = prefs.get("max_price")
    for key in ("prompt", "completion"):
        price = max_price.get(key) if isinstance(max_price, dict) else None
        if isinstance(price, (int, float, str)):
            cap = float(price)
            candidates = [p for p in candidates if getattr(p.price, key) <= cap]
    if not candidates:
        raise Unroutable(404, f"No allowed providers are available for the selected model. {_DOCS}")
    if "tools" in sent:
        candidates = [p for p in candidates if "tools" in p.supported_parameters]
        if not candidates:
            raise Unroutable(404, f"No endpoints found that support tool use. {_DOCS}")
    if prefs.get("require_parameters"):
        candidates = [p for p in candidates if sent <= set(p.supported_parameters)]
        if not candidates:
            raise Unroutable(
                404, f"No endpoints found that can handle the requested parameters. {_DOCS}"
            )
    allow_fallbacks = prefs.get("allow_fallbacks", True) is not False
    ordered: list[Provider] = []
    for ident in as_list(prefs.get("order")):
        ordered.extend(p for p in candidates if matches(ident, p) and p not in ordered)
    rest = sorted(
        (p for p in candidates if p not in ordered),
        key=lambda p: (p.price.prompt + p.price.completion, p.tag),
    )
    if prefs.get("order"):
        chosen = ordered + rest if allow_fallbacks else ordered
    else:
        chosen = rest if allow_fallbacks else rest[:1]
    if not chosen:
        raise Unroutable(404, f"No allowed providers are available for the selected model. {_DOCS}")
    return chosen
