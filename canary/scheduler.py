"""APScheduler wiring and the round lease; nothing else.

Exactly one replica runs a round: the round lease (a row in the store, renewed while the round
runs, expiring when its holder dies) keeps rounds from overlapping across replicas, and the
per-(model, slot) claim in the store keeps a slot from running twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from canary.logs import get_logger
from canary.store.repository import Store

log = get_logger("canary.scheduler")

ROUND_LEASE = "round"
LEASE_TTL_S = 90.0
LEASE_RENEW_S = 30.0

T = TypeVar("T")


async def under_round_lease(
    store: Store,
    holder: str,
    work: Callable[[], Awaitable[T]],
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ttl_s: float = LEASE_TTL_S,
    renew_every_s: float = LEASE_RENEW_S,
) -> tuple[bool, T | None]:
    """Run `work` only while holding the round lease. Returns (ran, result)."""
    if not store.try_acquire_lease(ROUND_LEASE, holder, clock(), ttl_s):
        log.info("round_lease_held_elsewhere", holder=holder)
        return False, None

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(renew_every_s)
            await asyncio.to_thread(store.renew_lease, ROUND_LEASE, holder, clock(), ttl_s)

    beat = asyncio.create_task(heartbeat())
    try:
        return True, await work()
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        with contextlib.suppress(Exception):
            store.release_lease(ROUND_LEASE, holder)


def aligned_start(interval_minutes: float) -> datetime:
    """An interval trigger anchored at the epoch fires on the same slots on every replica."""
    del interval_minutes
    return datetime(1970, 1, 1, tzinfo=UTC)


def build_scheduler(
    interval_minutes: float,
    run_round: Callable[[], Any],
    housekeeping: Callable[[], Any],
    *,
    housekeeping_every_s: float = 15.0,
    run_now: bool = True,
) -> Any:
    """A background scheduler: rounds never overlap, and missed rounds run once (coalesced)."""
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    scheduler = BackgroundScheduler(timezone=UTC)
    first_run: dict[str, Any] = {"next_run_time": datetime.now(UTC)} if run_now else {}
    scheduler.add_job(
        run_round,
        IntervalTrigger(minutes=interval_minutes, start_date=aligned_start(interval_minutes), timezone=UTC),
        id="round",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=int(interval_minutes * 60),
        **first_run,
    )
    scheduler.add_job(
        housekeeping,
        IntervalTrigger(seconds=housekeeping_every_s, timezone=UTC),
        id="housekeeping",
        max_instances=1,
        coalesce=True,
    )
    return scheduler
