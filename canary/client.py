"""The app-side helper: fetch canary's ignore list and put it into OpenRouter requests.

Dependency-light (httpx only), so an app can import it without the rest of canary::

    from pathlib import Path

    from openai import OpenAI

    from canary.client import IgnoreListClient

    ignore = IgnoreListClient(
        "http://canary.internal:8080",
        "acme/roleplay-1",
        cache_path=Path("/var/cache/app/ignore.json"),
    )
    openrouter = OpenAI(base_url="https://openrouter.ai/api/v1", api_key=OPENROUTER_API_KEY)
    reply = openrouter.chat.completions.create(
        model="acme/roleplay-1",
        messages=[{"role": "user", "content": "Hello"}],
        extra_body={"provider": ignore.provider()},  # {"ignore": ["bad-host", ...]}
    )

When the request already has a ``provider`` object, merge instead of replacing it::

    extra_body={"provider": merge_provider({"sort": "latency"}, ignore.get())}

What it promises:

- ``GET {base_url}/v1/ignore-list?model=M`` (``&needs=structured_outputs,tools`` with ``needs=``:
  the list cut for an app that uses only those capabilities; without it, the full list) with
  ``If-None-Match``: a 304 reuses the list held. A need not in :data:`KNOWN_NEEDS` is refused
  when the client is made (:class:`UnknownNeed`, a ``ValueError``), not by a 400 at run time;
  the server's ``Cache-Control: max-age`` is honoured (no request while the list is that fresh).
- The last good list is kept in memory and on disk (``cache_path``, written atomically), and
  read back from disk at start, so a restarted app has a list before canary answers.
- It **never falls back to an empty list because of an error**: a network error, a timeout, a 5xx,
  a 404, a malformed body, or a stale answer that would empty or roll back the list held all
  keep the last good list. An empty list that the server calls fresh (``"stale": false``) is
  legitimate and is used. After an error it waits ``retry_after_error_s`` before asking again, so
  a dead server does not add a timeout to every request of the app.
- :class:`IgnoreListUnavailable` is raised only when there has never been a good list (nothing in
  memory, nothing on disk): the caller decides (send the request without ``ignore``, or not).

Thread-safe: one client can be shared by the threads of an app.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "KNOWN_NEEDS",
    "IgnoreListClient",
    "IgnoreListUnavailable",
    "UnknownNeed",
    "merge_provider",
]

log = logging.getLogger("canary.client")
_CACHE_FORMAT = 1
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d+)", re.IGNORECASE)
# The capabilities a list can be cut for: canary.core.needs.KNOWN_NEEDS, repeated here so the
# helper imports nothing else of canary (a test keeps the two equal).
KNOWN_NEEDS = ("structured_outputs", "tools")


class IgnoreListUnavailable(RuntimeError):
    """There has never been a good ignore list for this model (the server could not be used)."""

    def __init__(self, model: str, cause: str) -> None:
        super().__init__(f"no ignore list for {model!r} yet: {cause}")
        self.model = model
        self.cause = cause


class UnknownNeed(ValueError):
    """A need canary cannot cut a list for; the message names the known ones."""

    def __init__(self, unknown: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        super().__init__(
            f"unknown need(s) {', '.join(self.unknown)} (known: {', '.join(KNOWN_NEEDS)})"
        )


class _BadAnswer(Exception):
    """The server answered, but not with a list we can use."""


@dataclass(frozen=True)
class _Held:
    ignore: tuple[str, ...]
    etag: str | None
    generated_at: str | None
    policy_version: str | None
    stale: bool


class IgnoreListClient:
    """Keeps the current ignore list of one model; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        cache_path: Path | None = None,
        timeout_s: float = 2.0,
        transport: httpx.BaseTransport | None = None,
        retry_after_error_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        needs: Sequence[str] = (),
    ) -> None:
        self.model = model
        self.needs = _needs_param(needs)
        self._url = base_url.rstrip("/") + "/v1/ignore-list"
        self._cache_path = cache_path
        self._retry_after_error_s = retry_after_error_s
        self._clock = clock
        self._http = httpx.Client(timeout=timeout_s, transport=transport, follow_redirects=False)
        self._lock = threading.Lock()
        self._held: _Held | None = self._load()
        self._fresh_until: float | None = (
            None  # clock time until which the held list needs no request
        )
        self._quiet_until: float | None = (
            None  # clock time before which no request follows an error
        )
        self.last_error: str | None = None

    def get(self) -> list[str]:
        """Tags for ``provider.ignore``: fresh if the server answers, else the last good list."""
        with self._lock:
            now = self._clock()
            if not self._wait(now):
                self._refresh(now)
            if self._held is None:
                raise IgnoreListUnavailable(self.model, self.last_error or "never fetched")
            return list(self._held.ignore)

    def provider(self) -> dict[str, Any]:
        """The ``provider`` object for an OpenRouter request: ``{"ignore": [...]}``."""
        return {"ignore": self.get()}

    @property
    def stale(self) -> bool:
        """True when the list held is not known to be current (the server said so, or it failed)."""
        held = self._held
        return held is None or held.stale or self.last_error is not None

    @property
    def generated_at(self) -> str | None:
        held = self._held
        return held.generated_at if held else None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> IgnoreListClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- steps -------------------------------------------------------------------------------

    def _wait(self, now: float) -> bool:
        """True when no request should be made now (list still fresh, or backing off an error)."""
        if self._held is not None and self._fresh_until is not None and now < self._fresh_until:
            return True
        return self._quiet_until is not None and now < self._quiet_until

    def _refresh(self, now: float) -> None:
        headers = {"Accept": "application/json"}
        if self._held is not None and self._held.etag:
            headers["If-None-Match"] = self._held.etag
        try:
            params = {"model": self.model, **({"needs": self.needs} if self.needs else {})}
            response = self._http.get(self._url, params=params, headers=headers)
            held = self._read(response)
        except httpx.HTTPError as exc:
            self._failed(now, f"{type(exc).__name__}: {exc}")
            return
        except _BadAnswer as exc:
            self._failed(now, str(exc))
            return
        self.last_error = None
        self._quiet_until = None
        max_age = _max_age(response.headers.get("Cache-Control", ""))
        self._fresh_until = now + max_age if max_age else None
        if held is not self._held:
            self._held = held
            self._save(held)

    def _read(self, response: httpx.Response) -> _Held:
        """The list to hold after this answer (the same object when nothing changes)."""
        if response.status_code == 304:
            if self._held is None:
                raise _BadAnswer("304 Not Modified without a list held")
            return self._held
        if response.status_code != 200:
            raise _BadAnswer(f"HTTP {response.status_code} from the ignore-list endpoint")
        candidate = _parse(response, self.model)
        held = self._held
        if candidate.stale and held is not None:
            if held.ignore and not candidate.ignore:
                raise _BadAnswer("stale empty list refused: keeping the last good list")
            if _older(candidate.generated_at, held.generated_at):
                raise _BadAnswer("stale list older than the one held: keeping it")
        return candidate

    def _failed(self, now: float, error: str) -> None:
        self.last_error = error
        self._quiet_until = now + self._retry_after_error_s
        self._fresh_until = None
        kept = len(self._held.ignore) if self._held else None
        log.warning(
            "ignore list for %s not refreshed (%s); kept %s entries", self.model, error, kept
        )

    # -- disk --------------------------------------------------------------------------------

    def _load(self) -> _Held | None:
        if self._cache_path is None:
            return None
        try:
            data = json.loads(self._cache_path.read_text(encoding="utf-8"))
            if data.get("format") != _CACHE_FORMAT or data.get("model") != self.model:
                return None
            if data.get("needs", "") != self.needs:
                return None  # a list cut for other needs
            ignore = data["ignore"]
            if not isinstance(ignore, list) or not all(isinstance(t, str) for t in ignore):
                return None
            return _Held(
                ignore=tuple(ignore),
                etag=_str_or_none(data.get("etag")),
                generated_at=_str_or_none(data.get("generated_at")),
                policy_version=_str_or_none(data.get("policy_version")),
                stale=bool(data.get("stale", False)),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            log.warning("ignore list cache %s unreadable (%s); not used", self._cache_path, exc)
            return None

    def _save(self, held: _Held) -> None:
        path = self._cache_path
        if path is None:
            return
        body = {
            "format": _CACHE_FORMAT,
            "model": self.model,
            "needs": self.needs,
            "ignore": list(held.ignore),
            "etag": held.etag,
            "generated_at": held.generated_at,
            "policy_version": held.policy_version,
            "stale": held.stale,
        }
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(body, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            log.warning(
                "ignore list cache %s not written (%s); the list stays in memory", path, exc
            )
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def _needs_param(needs: Sequence[str]) -> str:
    """The ``needs`` query value (sorted, comma-separated); unknown needs are refused here, at
    construction, rather than by a 400 on every refresh while the app runs on its cache."""
    if isinstance(needs, str):
        raise TypeError(f"needs must be a list of capabilities, not the string {needs!r}")
    wanted = {n.strip() for n in needs if n.strip()}
    unknown = sorted(wanted - set(KNOWN_NEEDS))
    if unknown:
        raise UnknownNeed(unknown)
    return ",".join(sorted(wanted))


def merge_provider(
    request_provider: dict[str, Any] | None, ignore: Sequence[str]
) -> dict[str, Any]:
    """A new ``provider`` object: ``request_provider``'s keys kept, ``ignore`` the union of both.

    Tags already in the request keep their place; new ones follow in the order given.
    The input is not modified.
    """
    merged = dict(request_provider or {})
    existing = merged.get("ignore") or []
    if isinstance(existing, str) or not isinstance(existing, list | tuple):
        raise TypeError(f"provider.ignore must be a list of tags, not {type(existing).__name__}")
    tags = list(existing)
    tags.extend(tag for tag in dict.fromkeys(ignore) if tag not in tags)
    merged["ignore"] = tags
    return merged


def _parse(response: httpx.Response, model: str) -> _Held:
    try:
        data = response.json()
    except ValueError:
        raise _BadAnswer("the ignore-list answer is not JSON") from None
    if not isinstance(data, dict):
        raise _BadAnswer("the ignore-list answer is not a JSON object")
    ignore = data.get("ignore")
    if not isinstance(ignore, list) or not all(isinstance(t, str) and t for t in ignore):
        raise _BadAnswer("the ignore-list answer has no list of tags in 'ignore'")
    if data.get("model") != model:
        raise _BadAnswer(f"the ignore-list answer is for {data.get('model')!r}, not {model!r}")
    stale = data.get("stale")
    if not isinstance(stale, bool):
        raise _BadAnswer("the ignore-list answer has no boolean 'stale'")
    return _Held(
        ignore=tuple(dict.fromkeys(ignore)),
        etag=response.headers.get("ETag"),
        generated_at=_str_or_none(data.get("generated_at")),
        policy_version=_str_or_none(data.get("policy_version")),
        stale=stale,
    )


def _older(candidate: str | None, held: str | None) -> bool:
    """True when both times are known ISO-8601 stamps and ``candidate`` is before ``held``."""
    if not candidate or not held:
        return False
    try:
        a = datetime.fromisoformat(candidate.replace("Z", "+00:00"))
        b = datetime.fromisoformat(held.replace("Z", "+00:00"))
        return a < b
    except (ValueError, TypeError):
        return False


def _max_age(cache_control: str) -> int:
    if "no-cache" in cache_control.lower() or "no-store" in cache_control.lower():
        return 0
    match = _MAX_AGE.search(cache_control)
    return int(match.group(1)) if match else 0


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
