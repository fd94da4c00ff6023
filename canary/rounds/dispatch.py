"""Which probe request starts next, within the round's limits.

A round's requests are bounded twice: ``concurrency`` in flight in all, and
``per_provider_concurrency`` per provider (base slug). No client can finish a round before the
largest of: all work / concurrency, the busiest provider's work / its limit, and the longest chain
of requests that wait on each other (a first look, then its re-checks). To approach that bound
whichever one binds, a freed slot goes to

1. the provider with the most work still ahead of it (registered with :meth:`Dispatcher.expect`
   as soon as a request is planned, so the busiest provider's pipe never runs dry while others
   take the global slots), among the providers under their own limit;
2. within that provider, a re-check before a first look (other requests wait on it), then the
   longest request first (a long request started last would end the round late), then the
   oldest.

Pure asyncio bookkeeping: no I/O, no clock. One dispatcher serves every model of a replica's
round, so the priorities hold across models.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

T = TypeVar("T")
M = TypeVar("M", bound="HasId")


class HasId(Protocol):
    @property
    def id(self) -> str: ...


def claim_order(
    models: Sequence[M], listed: Mapping[str, Collection[str]]
) -> tuple[list[M], dict[str, int]]:
    """The models, those with the busiest providers first (``listed``: each model's tags in
    its latest listing), and each one's endpoint count (10 when never listed)."""
    load: dict[str, int] = defaultdict(int)
    for tags in listed.values():
        for tag in tags:
            load[provider_of(tag)] += 1
    sizes = {m.id: len(listed.get(m.id) or ()) or 10 for m in models}

    def busiest(model: M) -> tuple[int, int, str]:
        tags = listed.get(model.id) or ()
        return (-max((load[provider_of(t)] for t in tags), default=0), -sizes[model.id], model.id)

    return sorted(models, key=busiest), sizes


def provider_of(tag: str) -> str:
    """The per-provider limit applies to the base slug (``deepinfra`` for ``deepinfra/fp8``)."""
    return tag.split("/", 1)[0]


_Waiter = tuple[bool, float, int, asyncio.Future[None]]  # (not urgent, -seconds, seq, future)


@dataclass
class _Provider:
    ahead_s: float = 0.0  # estimated seconds of work registered and not finished
    in_flight: int = 0
    waiting: list[_Waiter] = field(default_factory=list)  # a heap: the next to start first

    def queued(self) -> int:
        return len(self.waiting)

    def next(self) -> asyncio.Future[None] | None:
        while self.waiting:
            future = heapq.heappop(self.waiting)[3]
            if not future.done():  # a cancelled waiter gave up its place
                return future
        return None


class Dispatcher:
    def __init__(self, concurrency: int, per_provider: int) -> None:
        if concurrency < 1 or per_provider < 1:
            raise ValueError("concurrency and per_provider must be at least 1")
        self.concurrency = concurrency
        self.per_provider = per_provider
        self._providers: dict[str, _Provider] = defaultdict(_Provider)
        self._in_flight = 0
        self._seq = itertools.count()

    # -- what the round tells it ---------------------------------------------------------------

    def expect(self, provider: str, seconds: float) -> None:
        """Work planned for ``provider`` (a request not started yet): it counts toward the
        provider's priority from now until the request finishes."""
        self._providers[provider].ahead_s += max(0.0, seconds)

    @property
    def queued(self) -> int:
        """Requests waiting for a slot."""
        return sum(p.queued() for p in self._providers.values())

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def ahead_s(self, provider: str) -> float:
        return self._providers[provider].ahead_s

    # -- running requests ----------------------------------------------------------------------

    async def run(
        self,
        provider: str,
        work: Callable[[], Awaitable[T]],
        *,
        seconds: float,
        urgent: bool = False,
    ) -> T:
        """Run ``work`` in one of the round's slots; ``seconds`` is its estimate, registered with
        :meth:`expect` beforehand (it is taken off the provider's work when ``work`` ends)."""
        state = self._providers[provider]
        if self._free(state) and not self.queued:
            self._take(state)
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(state.waiting, (not urgent, -seconds, next(self._seq), future))
            self._grant()
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._finished(state, seconds)  # granted, then cancelled: hand it on
                else:
                    future.cancel()  # its place in the queue is skipped
                    state.ahead_s = max(0.0, state.ahead_s - seconds)
                raise
        try:
            return await work()
        finally:
            self._finished(state, seconds)

    def _free(self, state: _Provider) -> bool:
        return self._in_flight < self.concurrency and state.in_flight < self.per_provider

    def _take(self, state: _Provider) -> None:
        self._in_flight += 1
        state.in_flight += 1

    def _finished(self, state: _Provider, seconds: float) -> None:
        self._in_flight -= 1
        state.in_flight -= 1
        state.ahead_s = max(0.0, state.ahead_s - seconds)
        self._grant()

    def _grant(self) -> None:
        """Hand freed slots to the providers with the most work ahead, under their limit."""
        while self._in_flight < self.concurrency:
            ready = [
                (p.ahead_s, -i, name)
                for i, (name, p) in enumerate(self._providers.items())
                if p.queued() and p.in_flight < self.per_provider
            ]
            if not ready:
                return
            _, _, name = max(ready)
            state = self._providers[name]
            future = state.next()
            if future is None:
                continue
            self._take(state)
            future.set_result(None)
