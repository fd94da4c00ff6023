from __future__ import annotations

from typing import Any

import pytest

from canary.core.classify import (
    classify_exception,
    classify_status,
    error_message,
    retryable,
    says_no_endpoint,
)
from canary.core.model import Transport as T


def err(code: Any, message: str = "x", **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


NO_PROVIDER = err(503, "No provider available that meets your routing requirements")
OVERLOADED = err(503, "Provider overloaded", metadata={"error_type": "provider_overloaded"})
AVAIL_FILTERED = err(
    503, "unavailable", availability={"code": "constraint_filtered", "retryable": False}
)
AVAIL_TEMP = err(
    503, "unavailable", availability={"code": "temporarily_unavailable", "retryable": True}
)
RELAYED_403 = err(
    403, "Provider returned error", metadata={"provider_name": "Chutes", "raw": "forbidden"}
)


@pytest.mark.parametrize(
    ("status", "body", "pinned", "expected"),
    [
        (200, None, True, T.ok),
        (200, {"id": "gen-1", "choices": []}, True, T.ok),
        (429, err(429), True, T.rate_limited),
        (429, None, True, T.rate_limited),
        (500, None, True, T.provider_error),
        (502, err(502, "Upstream error"), True, T.provider_error),
        (503, OVERLOADED, True, T.provider_error),
        (503, AVAIL_TEMP, True, T.provider_error),
        (503, NO_PROVIDER, True, T.unroutable),
        (503, AVAIL_FILTERED, True, T.unroutable),
        (529, None, True, T.provider_error),
        (599, None, True, T.provider_error),
        (404, err(404, "No endpoints found for acme/m."), True, T.unroutable),
        (404, None, True, T.unroutable),
        (404, err(404, "Not Found"), False, T.auth_config),  # listing: the model id is unknown
        (408, None, True, T.timeout),
        (504, None, True, T.timeout),
        (524, None, True, T.timeout),
        (401, err(401, "No auth credentials found"), True, T.auth_config),
        (402, err(402, "Insufficient credits"), True, T.auth_config),
        (403, err(403, "Key is not allowed"), True, T.auth_config),
        (403, RELAYED_403, True, T.provider_error),
        (400, err(400, "invalid model"), True, T.bad_request),
        (413, None, True, T.bad_request),
        (422, None, True, T.bad_request),
        (418, None, True, T.bad_request),
        (301, None, True, T.auth_config),
        (101, None, True, T.provider_error),
        # An error sent with HTTP 200 is classified by its own code.
        (200, err(429, "Provider returned error"), True, T.rate_limited),
        (200, err(502), True, T.provider_error),
        (200, err("server_error"), True, T.provider_error),
        (200, err(200), True, T.provider_error),
        (200, err(True), True, T.provider_error),
    ],
)
def test_classify_status(
    status: int, body: dict[str, Any] | None, pinned: bool, expected: T
) -> None:
    assert classify_status(status, body, pinned=pinned) is expected


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("connect_error", T.provider_error),
        ("protocol_error", T.provider_error),
        ("read_error", T.provider_error),
        ("malformed_event", T.provider_error),
        ("something_new", T.provider_error),
        ("connect_timeout", T.timeout),
        ("read_timeout", T.timeout),
        ("pool_timeout", T.timeout),
        ("deadline", T.timeout),
        ("first_token_timeout", T.timeout),
        ("stream_timeout", T.timeout),
        ("unsupported_protocol", T.auth_config),
        ("invalid_url", T.auth_config),
    ],
)
def test_classify_exception(kind: str, expected: T) -> None:
    assert classify_exception(kind) is expected


@pytest.mark.parametrize(
    ("transport", "expected"),
    [
        (T.rate_limited, True),
        (T.provider_error, True),
        (T.timeout, True),
        (T.unroutable, False),
        (T.auth_config, False),
        (T.bad_request, False),
        (T.ok, False),
    ],
)
def test_retryable(transport: T, expected: bool) -> None:
    assert retryable(transport) is expected


def test_no_endpoint_phrases_are_recognised() -> None:
    assert says_no_endpoint(err(404, "No endpoints found that support tool use."))
    assert says_no_endpoint(err(503, "No allowed providers are available for the selected model."))
    assert not says_no_endpoint(err(503, "Provider overloaded"))
    assert not says_no_endpoint(None)
    assert not says_no_endpoint({"error": "a string"})


def test_error_message_names_status_provider_and_raw_text() -> None:
    body = err(
        429,
        "Provider returned error",
        metadata={"provider_name": "Google", "raw": "rate\n limited"},
    )
    assert error_message(429, body) == "HTTP 429: Provider returned error (Google): rate limited"
    assert error_message(200, err(429, "busy")) == "HTTP 200, code 429: busy"
    assert error_message(502, None) == "HTTP 502"
    assert error_message(503, OVERLOADED) == "HTTP 503: Provider overloaded [provider_overloaded]"


def test_error_message_is_bounded() -> None:
    assert len(error_message(500, err(500, "x" * 5000), limit=120)) == 120
