"""Report a bad answer to canary in one call: ``Reporter(...).report(answer, symptom=...)``.

A report names the model, the provider that served the answer and its generation id. Given the
answer itself (a dict, or an SDK object), they are read from it: ``id``, ``model`` and OpenRouter's
``provider`` field. Given a generation id alone (or an answer whose SDK drops ``provider``, as
the official ``openrouter`` SDK does), the provider is asked of OpenRouter's generation endpoint
with the app's own key (``openrouter_key``; it answers only to the account that made the
request, a few seconds after the answer ended); without a key, canary resolves it itself when its
key may read it. A report is never evidence: it makes canary look again at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

OPENROUTER = "https://openrouter.ai/api/v1"
SYMPTOMS = (
    "slow_first_token", "refusal", "empty", "filtered", "cut_short", "broken_json",
    "wrong_language", "mixed_language", "garbled_text", "stray_tokens", "repetition",
    "bad_tool_call", "other",
)  # fmt: skip
RESOLVE_WITHIN_S = 30.0  # how long the generation endpoint is asked before giving up
NOT_YET = (404, 429, 502, 503)  # the generation endpoint's answers worth asking again


class ReportRefused(RuntimeError):
    """canary refused the report (its status and error; ``retry_after_s`` on a 429)."""

    def __init__(self, status: int, error: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"canary refused the report ({status}): {error}")
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class _Seen:
    generation_id: str | None
    model: str | None
    provider: str | None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seen(answer: Any) -> _Seen:
    """What an answer says of itself: a generation id, a dict, or an SDK object."""
    if isinstance(answer, str):
        return _Seen(answer, None, None)
    if isinstance(answer, Mapping):
        return _Seen(
            _text(answer.get("id")), _text(answer.get("model")), _text(answer.get("provider"))
        )
    extra = getattr(answer, "model_extra", None) or {}
    provider = getattr(answer, "provider", None) or extra.get("provider")
    return _Seen(
        _text(getattr(answer, "id", None)), _text(getattr(answer, "model", None)), _text(provider)
    )


def _body(
    seen: _Seen, model: str | None, symptom: str, language: str | None, note: str | None
) -> dict[str, Any]:
    if symptom not in SYMPTOMS:
        raise ValueError(f"unknown symptom {symptom!r}; known: {', '.join(SYMPTOMS)}")
    named = model or seen.model
    if named is None:
        raise ValueError("the report needs the model: pass model= to Reporter, or the answer")
    optional = {
        "provider": seen.provider, "generation_id": seen.generation_id,
        "language": language, "note": note,
    }  # fmt: skip
    return {
        "model": named,
        "symptom": symptom,
        **{k: v for k, v in optional.items() if v is not None},
    }


def _answered(response: httpx.Response) -> dict[str, Any]:
    if response.status_code in (200, 201):
        return dict(response.json())
    try:
        error = str(response.json().get("error"))
    except ValueError:
        error = response.text[:200]
    wait = response.headers.get("retry-after")
    raise ReportRefused(response.status_code, error, float(wait) if wait else None)


def _waits() -> Iterator[float]:
    """The pauses between asks of the generation endpoint: from 0.5 s, doubling up to 8 s,
    while the total stays within :data:`RESOLVE_WITHIN_S`."""
    waited, delay = 0.0, 0.5
    while waited + delay <= RESOLVE_WITHIN_S:
        yield delay
        waited, delay = waited + delay, min(delay * 2, 8.0)


def _provider_of(response: httpx.Response) -> str | None:
    if response.status_code != 200:
        return None
    try:
        data = response.json().get("data") or {}
    except ValueError:
        return None
    return _text(data.get("provider_name"))


class Reporter:
    """Reports to canary with a report token (``[[reports.tokens]]``, never the admin token)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        model: str | None = None,
        openrouter_key: str | None = None,
        openrouter_url: str = OPENROUTER,
        timeout_s: float = 5.0,
        transport: httpx.BaseTransport | None = None,
        openrouter_transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/reports"
        self._headers = {"Authorization": f"Bearer {token}"}
        self._model = model
        self._key = openrouter_key
        self._openrouter = openrouter_url.rstrip("/") + "/generation"
        self._http = httpx.Client(timeout=timeout_s, transport=transport)
        self._or = httpx.Client(timeout=timeout_s, transport=openrouter_transport)
        self._sleep = sleep

    def report(
        self, answer: Any, *, symptom: str, language: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        """Report ``answer`` (an answer, or its generation id); canary's stored report back."""
        seen = _seen(answer)
        if seen.provider is None and seen.generation_id and self._key:
            seen = _Seen(seen.generation_id, seen.model, self._resolve(seen.generation_id))
        body = _body(seen, self._model, symptom, language, note)
        return _answered(self._http.post(self._url, json=body, headers=self._headers))

    def _resolve(self, generation_id: str) -> str | None:
        waits = _waits()
        while True:
            response = self._or.get(
                self._openrouter, params={"id": generation_id},
                headers={"Authorization": f"Bearer {self._key}"},
            )  # fmt: skip
            name = _provider_of(response)
            wait = next(waits, None)
            if name is not None or response.status_code not in NOT_YET or wait is None:
                return name
            self._sleep(wait)

    def close(self) -> None:
        self._http.close()
        self._or.close()

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncReporter:
    """:class:`Reporter` for asyncio apps: ``await report(...)``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        model: str | None = None,
        openrouter_key: str | None = None,
        openrouter_url: str = OPENROUTER,
        timeout_s: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
        openrouter_transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/reports"
        self._headers = {"Authorization": f"Bearer {token}"}
        self._model = model
        self._key = openrouter_key
        self._openrouter = openrouter_url.rstrip("/") + "/generation"
        self._http = httpx.AsyncClient(timeout=timeout_s, transport=transport)
        self._or = httpx.AsyncClient(timeout=timeout_s, transport=openrouter_transport)
        self._sleep = sleep

    async def report(
        self, answer: Any, *, symptom: str, language: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        """Report ``answer`` (an answer, or its generation id); canary's stored report back."""
        seen = _seen(answer)
        if seen.provider is None and seen.generation_id and self._key:
            seen = _Seen(seen.generation_id, seen.model, await self._resolve(seen.generation_id))
        body = _body(seen, self._model, symptom, language, note)
        return _answered(await self._http.post(self._url, json=body, headers=self._headers))

    async def _resolve(self, generation_id: str) -> str | None:
        waits = _waits()
        while True:
            response = await self._or.get(
                self._openrouter, params={"id": generation_id},
                headers={"Authorization": f"Bearer {self._key}"},
            )  # fmt: skip
            name = _provider_of(response)
            wait = next(waits, None)
            if name is not None or response.status_code not in NOT_YET or wait is None:
                return name
            await self._sleep(wait)

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._or.aclose()

    async def __aenter__(self) -> AsyncReporter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
