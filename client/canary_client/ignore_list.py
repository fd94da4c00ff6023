"""canary's ignore list in an app: fetch it, keep it, and put it into OpenRouter requests.

One module, httpx its only dependency, so an app can install ``canary-client`` or copy this
file. :class:`IgnoreListClient` (threads) and :class:`AsyncIgnoreListClient` (asyncio) differ
only in their I/O: the cache and the rules are one :class:`_Rules` object in both.

The rules:

- ``GET {base_url}/v1/ignore-list?model=M[&needs=...][&profile=P]`` with ``If-None-Match``
  (``profile``: a task profile of canary's settings, its list for one job): a 304 keeps the
  list held; ``Cache-Control: max-age`` is honoured (no request while the list is that fresh).
- The last good list is kept in memory and on disk (``cache_path``, written atomically) and read
  back at start, so a restarted app has a list before canary answers.
- An error never empties the list: a network error, a timeout, a non-200 answer, a malformed
  body, or a stale answer that would empty or roll back the list held all keep the last good
  list, and the next request waits ``retry_after_error_s``. Failures are logged at most once a
  minute (logger ``canary_client``), with the count since the last warning.
- A list not known to be current for ``max_stale_s`` (default 24 h) is dropped; an entry whose
  ``until`` has passed is never applied.
- Everything excluded (canary says no usable endpoint remains once the list is applied): by
  default the list is not applied for that model (``[]``; OpenRouter would answer 404 "No allowed
  providers are available") and one warning is logged; ``everything_excluded="raise"`` raises
  :class:`EverythingExcluded` instead.
- :class:`IgnoreListUnavailable` is raised when no list is held (never fetched, nothing on disk,
  or the one held was dropped for its age): the caller decides whether to send the request
  without ``ignore``.
- ``background=True``: a thread (sync) or a task (async) refreshes the list every
  ``poll_every_s`` (or when the server's ``max-age`` ends, if later), and ``get()`` never waits
  on canary. With nothing on disk, starting waits for a first list (at most ``timeout_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx

log = logging.getLogger("canary_client")
_CACHE_FORMAT = 2
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d+)", re.IGNORECASE)
_AS_OF_WRITES = timedelta(hours=1)
WARN_EVERY_S = 60.0  # failure warnings, at most one per this many seconds
# The capabilities a list can be cut for (canary.core.needs.KNOWN_NEEDS; a test keeps them equal).
KNOWN_NEEDS = ("structured_outputs", "tools")
Policy = Literal["ignore_nothing", "raise"]
WallClock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class IgnoreListUnavailable(RuntimeError):
    """No ignore list is held for this model (never fetched, or the one held was too old)."""

    def __init__(self, model: str, cause: str) -> None:
        super().__init__(f"no ignore list for {model!r}: {cause}")
        self.model = model
        self.cause = cause


class EverythingExcluded(RuntimeError):
    """canary says the list leaves no usable endpoint (raised with ``everything_excluded="raise"``)."""

    def __init__(self, model: str, ignore: Sequence[str]) -> None:
        super().__init__(f"canary's list for {model!r} excludes every endpoint: {list(ignore)}")
        self.model = model
        self.ignore = tuple(ignore)


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
class Entry:
    """Why one tag is on the list, and until when (None: until removed)."""

    provider: str
    layer: str
    until: datetime | None


@dataclass(frozen=True)
class HeldList:
    """The list held, as canary sent it; ``as_of`` is when it was last known to be current."""

    model: str
    ignore: tuple[str, ...]
    entries: tuple[Entry, ...]
    usable_endpoints: int | None
    floor_breached: bool
    stale: bool
    generated_at: str | None
    policy_version: str | None
    etag: str | None
    as_of: datetime

    def applied(self, now: datetime) -> tuple[str, ...]:
        """The tags to ignore at ``now``: a tag whose every entry has ended is left out."""
        ends: dict[str, list[datetime | None]] = {}
        for entry in self.entries:
            ends.setdefault(entry.provider, []).append(entry.until)
        return tuple(
            tag
            for tag in self.ignore
            if not ends.get(tag) or any(u is None or u > now for u in ends[tag])
        )


class _Rules:
    """The cache and every rule of the module docstring, without I/O (the disk copy aside)."""

    def __init__(
        self,
        model: str,
        needs: Sequence[str],
        cache_path: Path | str | None,
        retry_after_error_s: float,
        max_stale_s: float,
        everything_excluded: Policy,
        clock: Callable[[], float],
        wall_clock: WallClock,
        profile: str | None = None,
    ) -> None:
        if everything_excluded not in ("ignore_nothing", "raise"):
            raise ValueError(f"everything_excluded: 'ignore_nothing' or 'raise', not {everything_excluded!r}")
        self.model = model
        self.needs = _needs_param(needs)
        self.profile = profile
        self.cache_path = None if cache_path is None else Path(cache_path)
        self.retry_after_error_s = retry_after_error_s
        self.max_stale = timedelta(seconds=max_stale_s)
        self.policy = everything_excluded
        self.clock = clock
        self.wall_clock = wall_clock
        self.held: HeldList | None = _load(self.cache_path, model, self.needs, profile)
        self.fresh_until: float | None = None  # no request before this (server's max-age)
        self.quiet_until: float | None = None  # no request before this (after an error)
        self.last_error: str | None = None
        self._failures = 0  # since the last warning
        self._warned_at: float | None = None
        self._everything_warned = False

    @property
    def params(self) -> dict[str, str]:
        params = {"model": self.model, **({"needs": self.needs} if self.needs else {})}
        return params | ({"profile": self.profile} if self.profile else {})

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.held is not None and self.held.etag:
            headers["If-None-Match"] = self.held.etag
        return headers

    def wait_s(self) -> float:
        """Seconds before a request is due (0: due now)."""
        now = self.clock()
        until = [t for t in (self.quiet_until, self.fresh_until if self.held else None) if t is not None]
        return max([0.0, *(t - now for t in until)])

    def answered(self, response: httpx.Response) -> HeldList | None:
        """Take an answer; the list to write to disk when it changed, else None."""
        try:
            held = self._read(response)
        except _BadAnswer as exc:
            self.failed(str(exc))
            return None
        now = self.clock()
        if self._failures or self.last_error:
            log.info("ignore list for %s refreshed again", self.model)
        self.last_error, self.quiet_until, self._failures = None, None, 0
        max_age = _max_age(response.headers.get("Cache-Control", ""))
        self.fresh_until = now + max_age if max_age else None
        before, self.held = self.held, held
        if before is None or replace(held, as_of=before.as_of) != before:
            return held
        # the same list, confirmed: its time on disk is moved on now and then, not every answer
        return held if held.as_of - before.as_of > _AS_OF_WRITES else None

    def failed(self, error: str) -> None:
        now = self.clock()
        self.last_error = error
        self.quiet_until = now + self.retry_after_error_s
        self.fresh_until = None
        self._failures += 1
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY_S:
            return
        held = self.held
        kept = f"keeping the last good list of {len(held.ignore)} entries" if held else "no list held"
        log.warning(
            "ignore list for %s not refreshed: %s (%d failed attempts since the last warning); %s",
            self.model, error, self._failures, kept,
        )  # fmt: skip
        self._warned_at, self._failures = now, 0

    def current(self) -> list[str]:
        """The tags to send now, after the age, ``until`` and everything-excluded rules."""
        held, now = self.held, self.wall_clock()
        if held is not None and now - held.as_of > self.max_stale:
            log.warning(
                "ignore list for %s dropped: not confirmed since %s, longer than max_stale_s",
                self.model, held.as_of.isoformat(timespec="seconds"),
            )  # fmt: skip
            self.held = held = None
            self.last_error = f"the list held was older than {self.max_stale} and was dropped"
        if held is None:
            raise IgnoreListUnavailable(self.model, self.last_error or "never fetched")
        tags = held.applied(now)
        if held.usable_endpoints == 0 and len(tags) == len(held.ignore) and tags:
            if self.policy == "raise":
                raise EverythingExcluded(self.model, tags)
            if not self._everything_warned:
                log.warning(
                    "canary's list for %s excludes every endpoint; sending no ignore for it",
                    self.model,
                )
                self._everything_warned = True
            return []
        self._everything_warned = False
        return list(tags)

    def _read(self, response: httpx.Response) -> HeldList:
        held = self.held
        if response.status_code == 304:
            if held is None:
                raise _BadAnswer("304 Not Modified without a list held")
            return held if held.stale else replace(held, as_of=self.wall_clock())
        if response.status_code != 200:
            raise _BadAnswer(f"HTTP {response.status_code} from the ignore-list endpoint")
        candidate = _parse(response, self.model, self.wall_clock())
        if candidate.stale and held is not None:
            if held.ignore and not candidate.ignore:
                raise _BadAnswer("stale empty list refused: keeping the last good list")
            older, newer = _time(candidate.generated_at), _time(held.generated_at)
            if older and newer and older < newer:
                raise _BadAnswer("stale list older than the one held: keeping it")
        return candidate


class _Face:
    """What both clients tell of the list they hold."""

    _rules: _Rules

    @property
    def model(self) -> str:
        return self._rules.model

    @property
    def needs(self) -> str:
        """The ``needs`` query value (sorted, comma-separated; empty: the full list)."""
        return self._rules.needs

    @property
    def profile(self) -> str | None:
        """The task profile whose list is kept (None: the plain list)."""
        return self._rules.profile

    @property
    def held(self) -> HeldList | None:
        """The list held, as canary sent it (None: none)."""
        return self._rules.held

    @property
    def last_error(self) -> str | None:
        """Why the last request failed (None after a good answer)."""
        return self._rules.last_error

    @property
    def stale(self) -> bool:
        """True when the list is not known to be current (canary said so, or it failed)."""
        held = self._rules.held
        return held is None or held.stale or self._rules.last_error is not None

    @property
    def floor_breached(self) -> bool | None:
        """canary's capacity floor is breached on this list (None: no list held)."""
        held = self._rules.held
        return held.floor_breached if held else None

    @property
    def usable_endpoints(self) -> int | None:
        """Endpoints the list leaves usable, as canary counted them (None: unknown)."""
        held = self._rules.held
        return held.usable_endpoints if held else None

    @property
    def generated_at(self) -> str | None:
        held = self._rules.held
        return held.generated_at if held else None


class IgnoreListClient(_Face):
    """The current ignore list of one model, for threaded apps (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        cache_path: Path | str | None = None,
        timeout_s: float = 2.0,
        transport: httpx.BaseTransport | None = None,
        retry_after_error_s: float = 5.0,
        max_stale_s: float = 24 * 3600,
        everything_excluded: Policy = "ignore_nothing",
        needs: Sequence[str] = (),
        profile: str | None = None,
        background: bool = False,
        poll_every_s: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: WallClock = _utc_now,
    ) -> None:
        self._rules = _Rules(
            model, needs, cache_path, retry_after_error_s, max_stale_s, everything_excluded,
            clock, wall_clock, profile,
        )  # fmt: skip
        self._url = base_url.rstrip("/") + "/v1/ignore-list"
        self._http = httpx.Client(timeout=timeout_s, transport=transport, follow_redirects=False)
        self._state = threading.Lock()  # guards the rules: held only between I/O
        self._refreshing = threading.Lock()  # one request at a time
        self._poll_every_s = poll_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            first = 0.0
            if self._rules.held is None:  # nothing on disk: wait for a first list (timeout_s)
                self._fetch()
                first = self._next_s()
            self._thread = threading.Thread(
                target=self._loop, args=(first,), name=f"canary-{model}", daemon=True
            )
            self._thread.start()

    def get(self) -> list[str]:
        """Tags for ``provider.ignore`` (a new list each call)."""
        if self._thread is None:
            with self._refreshing:
                if self._rules.wait_s() == 0:
                    self._fetch()
        with self._state:
            return self._rules.current()

    def provider(self) -> dict[str, Any]:
        """The ``provider`` object for an OpenRouter request: ``{"ignore": [...]}``."""
        return {"ignore": self.get()}

    def refresh(self) -> bool:
        """Ask canary now, whatever the cache says; True when it answered with a usable list."""
        with self._refreshing:
            return self._fetch()

    def _fetch(self) -> bool:
        with self._state:
            headers = self._rules.headers()
        try:
            response = self._http.get(self._url, params=self._rules.params, headers=headers)
        except httpx.HTTPError as exc:
            with self._state:
                self._rules.failed(_describe(exc))
            return False
        with self._state:
            changed = self._rules.answered(response)
            ok = self._rules.last_error is None
        if changed is not None:
            _save(self._rules, changed)
        return ok

    def _next_s(self) -> float:
        with self._state:
            return max(self._poll_every_s, self._rules.wait_s())

    def _loop(self, delay: float) -> None:
        while not self._stop.wait(delay):
            self._fetch()
            delay = self._next_s()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._http.close()

    def __enter__(self) -> IgnoreListClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncIgnoreListClient(_Face):
    """The current ignore list of one model, for asyncio apps: the same rules and arguments as
    :class:`IgnoreListClient`; ``await get()``. With ``background=True``, use it as ``async
    with`` (or ``await start()``): a task refreshes the list, and ``get()`` never waits."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        cache_path: Path | str | None = None,
        timeout_s: float = 2.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_after_error_s: float = 5.0,
        max_stale_s: float = 24 * 3600,
        everything_excluded: Policy = "ignore_nothing",
        needs: Sequence[str] = (),
        profile: str | None = None,
        background: bool = False,
        poll_every_s: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: WallClock = _utc_now,
    ) -> None:
        self._rules = _Rules(
            model, needs, cache_path, retry_after_error_s, max_stale_s, everything_excluded,
            clock, wall_clock, profile,
        )  # fmt: skip
        self._url = base_url.rstrip("/") + "/v1/ignore-list"
        self._http = httpx.AsyncClient(
            timeout=timeout_s, transport=transport, follow_redirects=False
        )
        self._refreshing = asyncio.Lock()
        self._background = background
        self._poll_every_s = poll_every_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the background refresh; with no list held, wait for the first answer (at most
        ``timeout_s``) so the first requests have one."""
        if self._background and self._task is None:
            first = 0.0
            if self._rules.held is None:
                await self.refresh()
                first = self._next_s()
            self._task = asyncio.create_task(self._loop(first), name=f"canary-{self.model}")

    async def get(self) -> list[str]:
        """Tags for ``provider.ignore`` (a new list each call)."""
        if not self._background:
            async with self._refreshing:
                if self._rules.wait_s() == 0:
                    await self._fetch()
        return self._rules.current()

    async def provider(self) -> dict[str, Any]:
        """The ``provider`` object for an OpenRouter request: ``{"ignore": [...]}``."""
        return {"ignore": await self.get()}

    async def refresh(self) -> bool:
        """Ask canary now, whatever the cache says; True when it answered with a usable list."""
        async with self._refreshing:
            return await self._fetch()

    async def _fetch(self) -> bool:
        try:
            response = await self._http.get(
                self._url, params=self._rules.params, headers=self._rules.headers()
            )
        except httpx.HTTPError as exc:
            self._rules.failed(_describe(exc))
            return False
        changed = self._rules.answered(response)
        if changed is not None:
            await asyncio.to_thread(_save, self._rules, changed)
        return self._rules.last_error is None

    def _next_s(self) -> float:
        return max(self._poll_every_s, self._rules.wait_s())

    async def _loop(self, delay: float) -> None:
        while True:
            await asyncio.sleep(delay)
            await self.refresh()
            delay = self._next_s()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._http.aclose()

    async def __aenter__(self) -> AsyncIgnoreListClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def merge_provider(
    request_provider: dict[str, Any] | None, ignore: Sequence[str]
) -> dict[str, Any]:
    """A new ``provider`` object: ``request_provider``'s keys kept, ``ignore`` the union of both.

    Tags already in the request keep their place; new ones follow in the order given. The input
    is not modified.
    """
    merged = dict(request_provider or {})
    existing = merged.get("ignore") or []
    if isinstance(existing, str) or not isinstance(existing, list | tuple):
        raise TypeError(f"provider.ignore must be a list of tags, not {type(existing).__name__}")
    tags = list(existing)
    tags.extend(tag for tag in dict.fromkeys(ignore) if tag not in tags)
    merged["ignore"] = tags
    return merged


def _describe(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


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


def _parse(response: httpx.Response, model: str, now: datetime) -> HeldList:
    try:
        data = response.json()
    except ValueError:
        raise _BadAnswer("the ignore-list answer is not JSON") from None
    if not isinstance(data, dict):
        raise _BadAnswer("the ignore-list answer is not a JSON object")
    if data.get("model") != model:
        raise _BadAnswer(f"the ignore-list answer is for {data.get('model')!r}, not {model!r}")
    stale = data.get("stale")
    if not isinstance(stale, bool):
        raise _BadAnswer("the ignore-list answer has no boolean 'stale'")
    held = _document(data, etag=response.headers.get("ETag"), as_of=now)
    if stale:  # canary's last good read, not now
        held = replace(held, stale=True, as_of=min(now, _time(held.generated_at) or now))
    return held


def _document(data: dict[str, Any], *, etag: str | None, as_of: datetime) -> HeldList:
    """A :class:`HeldList` from a document (or the disk copy of one); ``_BadAnswer`` if unusable."""
    ignore = data.get("ignore")
    if not isinstance(ignore, list) or not all(isinstance(t, str) and t for t in ignore):
        raise _BadAnswer("the ignore-list answer has no list of tags in 'ignore'")
    entries = data.get("entries") or []
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("provider"), str) for e in entries
    ):
        raise _BadAnswer("the ignore-list answer's 'entries' are not entries")
    usable = data.get("usable_endpoints")
    return HeldList(
        model=str(data["model"]),
        ignore=tuple(dict.fromkeys(ignore)),
        entries=tuple(
            Entry(e["provider"], str(e.get("layer") or ""), _time(e.get("until"))) for e in entries
        ),
        usable_endpoints=usable if isinstance(usable, int) else None,
        floor_breached=data.get("floor_breached") is True,
        stale=data.get("stale") is True,
        generated_at=_str_or_none(data.get("generated_at")),
        policy_version=_str_or_none(data.get("policy_version")),
        etag=etag,
        as_of=as_of,
    )


def _time(value: Any) -> datetime | None:
    """An ISO-8601 time as an aware datetime (UTC when it names no zone); None if not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _max_age(cache_control: str) -> int:
    if "no-cache" in cache_control.lower() or "no-store" in cache_control.lower():
        return 0
    match = _MAX_AGE.search(cache_control)
    return int(match.group(1)) if match else 0


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


# -- the disk copy -------------------------------------------------------------------------------


def _load(path: Path | None, model: str, needs: str, profile: str | None) -> HeldList | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") not in (1, _CACHE_FORMAT):
            return None
        if (data.get("model"), data.get("needs", ""), data.get("profile")) != (model, needs, profile):
            return None  # another model's list, or one cut for other needs or another profile
        # format 1 kept no as_of: its generated_at is the latest the list is known current
        as_of = _time(data.get("as_of") or data.get("generated_at"))
        if as_of is None:
            return None
        return _document(data, etag=_str_or_none(data.get("etag")), as_of=as_of)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, _BadAnswer) as exc:
        log.warning("ignore list cache %s unreadable (%s); not used", path, exc)
        return None


def _save(rules: _Rules, held: HeldList) -> None:
    path = rules.cache_path
    if path is None:
        return
    body = {
        "format": _CACHE_FORMAT,
        "model": held.model,
        "needs": rules.needs,
        "profile": rules.profile,
        "ignore": list(held.ignore),
        "entries": [
            {"provider": e.provider, "layer": e.layer, "until": e.until and e.until.isoformat()}
            for e in held.entries
        ],
        "usable_endpoints": held.usable_endpoints,
        "floor_breached": held.floor_breached,
        "stale": held.stale,
        "generated_at": held.generated_at,
        "policy_version": held.policy_version,
        "etag": held.etag,
        "as_of": held.as_of.isoformat(),
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
        log.warning("ignore list cache %s not written (%s); the list stays in memory", path, exc)
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
