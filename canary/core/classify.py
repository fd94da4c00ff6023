"""Wire outcome -> transport class. Pure: every input is a status, a parsed body or a short kind.

The rules (see ``../shared/docs/openrouter-api.md`` section 4 and the mission's "classify every
failure before acting on it"):

- 429 is a rate limit; 408, 504 and 524 are timeouts; other 5xx (500, 502, 503, 529, ...) are a
  provider outage;
- a pinned request that no endpoint can serve is *unroutable*: 404, or a 503 whose body says that
  no endpoint/provider meets the routing requirements (or ``error.availability.code`` is
  ``no_endpoints``/``constraint_filtered``);
- 401, 402 and 403 from OpenRouter itself are auth/config problems (ours); a 403 that OpenRouter
  relays from the upstream provider (``metadata.provider_name`` is set) is the provider's;
- 400, 413, 422 and the other 4xx are bad requests (our bug); a 3xx means the base URL is wrong.
- A body with a top-level ``error`` sent with HTTP 200 (seen in 2025 for an upstream 429) is
  classified by its ``error.code``; a 2xx other than 200 is not an answer: a provider error.
"""

from __future__ import annotations

from pydantic import JsonValue

from canary.core.model import Transport

NO_ENDPOINT_CODES = frozenset({"no_endpoints", "constraint_filtered"})
_NO_ENDPOINT_PHRASES = (
    "no endpoints found",
    "no endpoint",
    "no provider",
    "no allowed providers",
    "routing requirements",
)

_BY_STATUS: dict[int, Transport] = {
    400: Transport.bad_request,
    401: Transport.auth_config,
    402: Transport.auth_config,
    403: Transport.auth_config,
    404: Transport.unroutable,
    408: Transport.timeout,
    413: Transport.bad_request,
    422: Transport.bad_request,
    429: Transport.rate_limited,
    500: Transport.provider_error,
    502: Transport.provider_error,
    503: Transport.provider_error,
    504: Transport.timeout,
    524: Transport.timeout,
    529: Transport.provider_error,
}

# Kinds of low-level failure (canary.openrouter.wire.exception_kind) that mean "it took too long".
TIMEOUT_KINDS = frozenset(
    {
        "timeout",
        "deadline",
        "connect_timeout",
        "read_timeout",
        "write_timeout",
        "pool_timeout",
        "first_token_timeout",
        "stream_timeout",
    }
)
# Kinds that say our own configuration is wrong (the base URL cannot even be used).
CONFIG_KINDS = frozenset({"invalid_url", "unsupported_protocol", "too_many_redirects"})


def error_of(body: JsonValue) -> dict[str, JsonValue] | None:
    """The ``error`` object of an OpenRouter body, or None."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return error
    return None


def error_code(body: JsonValue) -> int | None:
    """``error.code`` when it is an HTTP-like integer (a string code, as on one doc page: None)."""
    error = error_of(body)
    if error is None:
        return None
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, int):
        return None
    return code if 100 <= code <= 599 else None


def availability_code(body: JsonValue) -> str | None:
    error = error_of(body)
    availability = error.get("availability") if error else None
    if isinstance(availability, dict) and isinstance(availability.get("code"), str):
        return str(availability["code"])
    return None


def says_no_endpoint(body: JsonValue) -> bool:
    """The body says no endpoint/provider can serve the request as routed."""
    if availability_code(body) in NO_ENDPOINT_CODES:
        return True
    error = error_of(body)
    message = error.get("message") if error else None
    if not isinstance(message, str):
        return False
    lowered = message.lower()
    return any(phrase in lowered for phrase in _NO_ENDPOINT_PHRASES)


def relayed_from_provider(body: JsonValue) -> bool:
    """OpenRouter relays an upstream provider's answer (``metadata.provider_name`` is set)."""
    error = error_of(body)
    metadata = error.get("metadata") if error else None
    return isinstance(metadata, dict) and bool(metadata.get("provider_name"))


def classify_status(
    status: int, body: dict[str, JsonValue] | None, *, pinned: bool = True
) -> Transport:
    """Classify an HTTP answer from its status and (parsed, possibly absent) body.

    ``pinned`` is False for requests that pin nothing (the endpoints listing): there a 404 means
    the model id itself is unknown, which is a configuration problem, not an unroutable pin.
    """
    if 200 <= status < 300:
        code = error_code(body)
        if code is None:
            # an error object, or a 2xx other than 200 (201, 204, 206...): no answer was served
            if error_of(body) is not None or status != 200:
                return Transport.provider_error
            return Transport.ok
        if 200 <= code < 300:
            return Transport.provider_error  # an error object that claims success: still an error
        return classify_status(code, body, pinned=pinned)
    if availability_code(body) in NO_ENDPOINT_CODES:
        return Transport.unroutable
    if status == 404:
        return Transport.unroutable if pinned else Transport.auth_config
    if status == 503 and says_no_endpoint(body):
        return Transport.unroutable
    if status == 403 and relayed_from_provider(body):
        return Transport.provider_error
    known = _BY_STATUS.get(status)
    if known is not None:
        return known
    if 300 <= status < 400:
        return Transport.auth_config  # a redirect: the configured base URL is wrong
    if 400 <= status < 500:
        return Transport.bad_request
    return Transport.provider_error  # 5xx and anything stranger


def classify_exception(exc_kind: str) -> Transport:
    """Classify a failure that produced no HTTP status (connect error, reset, read timeout...)."""
    if exc_kind in TIMEOUT_KINDS:
        return Transport.timeout
    if exc_kind in CONFIG_KINDS:
        return Transport.auth_config
    return Transport.provider_error  # connect errors, resets, truncated or malformed streams


def retryable(transport: Transport) -> bool:
    """Worth another try within the same deadline (rate limit, outage, timeout)."""
    return transport in (Transport.rate_limited, Transport.provider_error, Transport.timeout)


def error_message(status: int | None, body: JsonValue, *, limit: int = 300) -> str:
    """A short readable message: ``HTTP 429: Provider returned error (Google): <raw>``."""
    head = f"HTTP {status}" if status is not None else "error"
    error = error_of(body)
    if error is None:
        return head
    parts = [head]
    code = error.get("code")
    if code is not None and code != status:
        parts.append(f"code {code}")
    text = str(error.get("message") or "").strip()
    metadata = error.get("metadata")
    if isinstance(metadata, dict):
        provider = metadata.get("provider_name")
        if provider:
            text = f"{text} ({provider})"
        raw = metadata.get("raw")
        if isinstance(raw, str) and raw.strip():
            text = f"{text}: {' '.join(raw.split())}"
        elif isinstance(metadata.get("error_type"), str):
            text = f"{text} [{metadata['error_type']}]"
    message = ", ".join(parts) + (f": {text}" if text else "")
    return message if len(message) <= limit else message[: limit - 1] + "…"
