"""APScheduler wiring and who runs a round; nothing else.

On PostgreSQL, replicas share each slot: every model's round is claimed by one replica (a row
claim with a heartbeat, see :mod:`canary.store._claims`), so no lease is taken and any number of
replicas work on one slot at once. On SQLite one runner works at a time: the round lease (a row
in the store, renewed while the round runs, expiring when its holder dies) keeps rounds from
overlapping, and the per-(model, slot) claim keeps a slot from running twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from canary.rounds.slot_trigger import SlotTrigger
from canary.service.logs import get_logger
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store

log = get_logger("canary.rounds.scheduler")

ROUND_LEASE = "round"
LEASE_TTL_S = 90.0
LEASE_RENEW_S = 30.0

T = TypeVar("T")


class LeaseLost(RuntimeError):
    """The round lease was taken over while a round ran (its renewals were missed)."""

    def __init__(self, holder: str) -> None:
        super().__init__(f"{holder} lost the round lease mid-round; the round was cancelled")
        self.holder = holder


def _free_lease_of_dead_local_holder(store: Store, holder: str) -> None:
    """A holder on this host whose process is gone will never renew: free its lease at once,
    so a daemon restarted after a crash does not wait out the TTL."""
    current = store.lease(ROUND_LEASE)
    if current is None or current.holder == holder:
        return
    host, _, pid = current.holder.rpartition(":")
    if host != holder.rpartition(":")[0] or not pid.isdigit():
        return
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        if store.release_lease(ROUND_LEASE, current.holder):
            log.warning("round_lease_freed_from_dead_holder", dead=current.holder, holder=holder)
    except PermissionError:  # alive, owned by another user
        return


async def round_turn(
    store: Store,
    holder: str,
    work: Callable[[], Awaitable[T]],
    *,
    ttl_s: float = LEASE_TTL_S,
    renew_every_s: float = LEASE_RENEW_S,
) -> tuple[bool, T | None]:
    """Run a round: shared by the replicas on PostgreSQL (per-model claims), under the round
    lease on SQLite. Returns (ran, result)."""
    if store.is_postgres:
        return True, await work()
    return await under_round_lease(store, holder, work, ttl_s=ttl_s, renew_every_s=renew_every_s)


async def under_round_lease(
    store: Store,
    holder: str,
    work: Callable[[], Awaitable[T]],
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ttl_s: float = LEASE_TTL_S,
    renew_every_s: float = LEASE_RENEW_S,
) -> tuple[bool, T | None]:
    """Run `work` only while holding the round lease. Returns (ran, result).

    The lease is renewed every `renew_every_s` while the work runs. When a renewal finds the
    lease held by someone else (this holder stalled past `ttl_s` and another replica took over),
    the work is cancelled and :class:`LeaseLost` raised, so two replicas never run rounds at once.
    A renewal that fails on a store error is retried at the next beat.

    Having the lease means no other replica runs a round now (every runner takes this lease,
    and one that stalled past its TTL is cancelled at its next beat): a round still ``running``
    was left by a dead holder, and is marked abandoned first.
    """
    now = clock()
    _free_lease_of_dead_local_holder(store, holder)
    if not store.try_acquire_lease(ROUND_LEASE, holder, now, ttl_s):
        log.info("round_lease_held_elsewhere", holder=holder)
        return False, None
    lost = False
    try:
        abandoned = store.abandon_stale_rounds(now, now=now)
        if abandoned:
            log.warning("stale_rounds_abandoned", count=abandoned, holder=holder)
        task: asyncio.Task[T] = asyncio.ensure_future(work())

        async def heartbeat() -> None:
            nonlocal lost
            while True:
                await asyncio.sleep(renew_every_s)
                try:
                    kept = await asyncio.to_thread(
                        store.renew_lease, ROUND_LEASE, holder, clock(), ttl_s
                    )
                except STORE_ERRORS as exc:  # the store blinked: try again at the next beat
                    log.warning("round_lease_renew_failed", holder=holder, error=repr(exc))
                    continue
                if not kept:
                    lost = True
                    log.error("round_lease_lost", holder=holder)
                    task.cancel()
                    return

        beat = asyncio.create_task(heartbeat())
        try:
            return True, await task
        except asyncio.CancelledError:
            if lost:
                raise LeaseLost(holder) from None
            raise
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
    finally:
        if not lost:
            with contextlib.suppress(Exception):
                store.release_lease(ROUND_LEASE, holder)


# no job overlaps itself, and the runs it missed run once
JOB_DEFAULTS = {"max_instances": 1, "coalesce": True}


def build_scheduler(
    interval_minutes: float,
    run_round: Callable[[], None],
    housekeeping: Callable[[], None],
    *,
    housekeeping_every_s: float = 15.0,
    run_now: bool = True,
    retention: Callable[[], None] | None = None,
    retention_every_s: float = 3600.0,
    retention_first_after_s: float = 60.0,
    equality: Callable[[], None] | None = None,
    equality_every_s: float = 600.0,
) -> BackgroundScheduler:
    """A background scheduler: rounds at every slot's start (on every replica at once, see
    :class:`~canary.rounds.slot_trigger.SlotTrigger`) and, with ``run_now``, once at start-up; rounds
    never overlap, and missed rounds run once (coalesced);
    housekeeping every few seconds; retention (when given) hourly, in a job of its own so that a
    long prune never holds up the ignore list's refresh or the notifications; the equality check
    (when given) looks every ``equality_every_s`` for models whose check of the slot is due, in
    a job of its own so that it never holds up a round."""
    scheduler = BackgroundScheduler(timezone=UTC, job_defaults=JOB_DEFAULTS)
    first_run = {"next_run_time": datetime.now(UTC)} if run_now else {}
    scheduler.add_job(
        run_round,
        SlotTrigger(interval_minutes),
        id="round",
        misfire_grace_time=int(interval_minutes * 60),
        **first_run,
    )
    scheduler.add_job(
        housekeeping,
        IntervalTrigger(seconds=housekeeping_every_s, timezone=UTC),
        id="housekeeping",
    )
    if retention is not None:
        scheduler.add_job(
            retention,
            IntervalTrigger(seconds=retention_every_s, timezone=UTC),
            id="retention",
            next_run_time=datetime.now(UTC) + timedelta(seconds=retention_first_after_s),
        )
    if equality is not None:
        scheduler.add_job(
            equality,
            IntervalTrigger(seconds=equality_every_s, timezone=UTC),
            id="equality",
        )
    return scheduler
