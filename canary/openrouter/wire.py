"""Small helpers of the HTTP shell: the pin, exception kinds, body reading, Retry-After."""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx
from pydantic import JsonValue

from canary.core.classify import error_message, error_of
from canary.openrouter.endpoints import slugify
from canary.openrouter.shapes import JSONObject, as_object
from canary.service.logs import scrub

# Parameters whose silent dropping would change what a probe tests: when the body sends any of
# them, the pin asks for `require_parameters: true` so that OpenRouter refuses instead of dropping.
REQUIRED_WHEN_SENT = frozenset(
    {
        "response_format",
        "structured_outputs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "seed",
        "logprobs",
        "top_logprobs",
        "logit_bias",
    }
)
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
MAX_ERROR_BODY_BYTES = 64 * 1024


def pin_provider(tag: str, require_parameters: bool) -> JSONObject:
    """The `provider` object that pins one endpoint with no fallback."""
    return {
        "only": [tag],
        "order": [tag],
        "allow_fallbacks": False,
        "require_parameters": require_parameters,
    }


def requires_parameters(body: JSONObject) -> bool:
    return any(body.get(name) is not None for name in REQUIRED_WHEN_SENT)


def pinned_payload(model: str, tag: str, body: JSONObject) -> JSONObject:
    """The caller's body, streaming, for ``model``, with the pin merged over any `provider` keys
    the caller gave (data-policy filters survive; routing keys are ours)."""
    caller = as_object(body.get("provider")) or {}
    pin = pin_provider(tag, requires_parameters(body))
    return {**body, "model": model, "stream": True, "provider": {**caller, **pin}}


def exception_kind(exc: BaseException) -> str:
    """A short, secret-free name for a low-level failure (input of ``classify_exception``)."""
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (httpx.ConnectTimeout, "connect_timeout"),
        (httpx.ReadTimeout, "read_timeout"),
        (httpx.WriteTimeout, "write_timeout"),
        (httpx.PoolTimeout, "pool_timeout"),
        (httpx.ConnectError, "connect_error"),
        (httpx.ProxyError, "proxy_error"),
        (httpx.RemoteProtocolError, "protocol_error"),
        (httpx.ReadError, "read_error"),
        (httpx.WriteError, "write_error"),
        (httpx.DecodingError, "decoding_error"),
        (httpx.UnsupportedProtocol, "unsupported_protocol"),
        (httpx.InvalidURL, "invalid_url"),
        (httpx.TooManyRedirects, "too_many_redirects"),
        (TimeoutError, "deadline"),
        (OSError, "connect_error"),
    )
    for cls, kind in kinds:
        if isinstance(exc, cls):
            return kind
    return "network_error"


def describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return scrub(f"{exception_kind(exc)}: {text}" if text else exception_kind(exc))


def load_json(raw: bytes) -> JsonValue:
    """A JSON body, tolerating the leading whitespace OpenRouter sends as a keep-alive."""
    try:
        value: JsonValue = json.loads(raw.decode("utf-8", errors="replace"))
        return value
    except (ValueError, RecursionError):
        return None


def snippet(raw: bytes, content_type: str) -> str:
    text = " ".join(raw[:2000].decode("utf-8", errors="replace").split())
    if "html" in content_type.lower():
        lowered = text.lower()
        start, end = lowered.find("<title>"), lowered.find("</title>")
        if 0 <= start < end:
            text = text[start + 7 : end].strip()
    return scrub(text[:160])


def http_error_message(status: int, body: JsonValue, raw: bytes, content_type: str) -> str:
    """``HTTP 502: <error.message>`` for a JSON error body, else the status, the content type
    and a short snippet of the body (an HTML page is named by its <title>)."""
    message = error_message(status, body)
    if error_of(body) is None and raw.strip():
        message = f"{message} ({content_type or 'no content type'}): {snippet(raw, content_type)}"
    return message


def retry_after(headers: Mapping[str, str], body: JsonValue) -> float | None:
    value = headers.get("retry-after")
    if value is not None:
        try:
            seconds = float(value.strip())
        except ValueError:
            seconds = -1.0  # an HTTP date: fall back to our own backoff
        if seconds >= 0:
            return seconds
    error = error_of(body)
    availability = error.get("availability") if error else None
    if isinstance(availability, dict):
        seconds_raw = availability.get("retry_after")
        if isinstance(seconds_raw, (int, float)) and not isinstance(seconds_raw, bool):
            return max(float(seconds_raw), 0.0)
    return None


def error_provider(body: JsonValue) -> str | None:
    error = error_of(body)
    metadata = error.get("metadata") if error else None
    name = metadata.get("provider_name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def same_provider(served_by: str, provider_name: str) -> bool:
    a, b = served_by.strip().casefold(), provider_name.strip().casefold()
    return a == b or slugify(a) == slugify(b)


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body, and whether there was more."""
    out = bytearray()
    async for piece in response.aiter_bytes():
        out.extend(piece)
        if len(out) > limit:
            return bytes(out[:limit]), True
    return bytes(out), False
