"""The round lease around a round: one holder at a time, dead rounds abandoned, a lost lease
cancels the round. A real SQLite store; time is passed in."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from builders import round_of

from canary.rounds.scheduler import ROUND_LEASE, LeaseLost, under_round_lease
from canary.store.repository import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/lease-1"


@pytest.fixture
def store(sqlite_store: Store) -> Store:
    """A store of each test's own (tests/conftest.py): one test's lease never meets the next."""
    return sqlite_store


def test_work_does_not_run_while_another_replica_holds_the_lease(store: Store) -> None:
    assert store.try_acquire_lease(ROUND_LEASE, "other:1", T0, 60)
    ran: list[str] = []

    async def work() -> str:
        ran.append("me")
        return "done"

    outcome = asyncio.run(under_round_lease(store, "me:2", work, clock=lambda: T0, ttl_s=60))
    assert outcome == (False, None) and ran == []
    assert (store.lease(ROUND_LEASE) or pytest.fail("lease gone")).holder == "other:1"


def test_the_lease_is_released_after_the_round(store: Store) -> None:
    async def work() -> str:
        assert (store.lease(ROUND_LEASE) or pytest.fail("no lease")).holder == "me:2"
        return "done"

    assert asyncio.run(under_round_lease(store, "me:2", work, clock=lambda: T0)) == (True, "done")
    assert store.lease(ROUND_LEASE) is None


def test_taking_over_the_lease_abandons_the_dead_holders_round(store: Store) -> None:
    # The dead replica took its 60 s lease at T0, claimed a round a moment later, and died.
    assert store.try_acquire_lease(ROUND_LEASE, "dead:1", T0, 60)
    moment = T0 + timedelta(seconds=0.2)
    dead = store.claim_round(MODEL, T0, "dead:1", "v1", {}, started_at=moment)
    later = T0 + timedelta(seconds=60)  # the lease has just expired

    async def work() -> str:
        return round_of(store, dead or 0).status

    outcome = asyncio.run(under_round_lease(store, "me:2", work, clock=lambda: later, ttl_s=60))
    assert outcome == (True, "abandoned")
    row = round_of(store, dead or 0)
    assert row.detail == {"why": "stale"} and row.finished_at == later


def test_a_lease_lost_mid_round_cancels_the_round(store: Store) -> None:
    cancelled = asyncio.Event()

    async def work() -> None:
        # Meanwhile this replica stalled past its TTL and another one took the lease over.
        assert store.try_acquire_lease(ROUND_LEASE, "other:1", T0 + timedelta(seconds=61), 60)
        try:
            await asyncio.Event().wait()  # a round that would go on forever
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(LeaseLost, match="me:2 lost the round lease"):
        asyncio.run(
            under_round_lease(store, "me:2", work, clock=lambda: T0, ttl_s=60, renew_every_s=0.01)
        )
    assert cancelled.is_set()
    # the new holder keeps its lease: the loser never releases what it no longer holds
    assert (store.lease(ROUND_LEASE) or pytest.fail("lease gone")).holder == "other:1"


def test_a_lease_held_by_a_dead_process_on_this_host_is_taken_at_once(store: Store) -> None:
    import os
    import socket

    # beyond Linux's largest pid (PID_MAX_LIMIT, 2**22): certainly no process has it
    dead = f"{socket.gethostname()}:{2**22 + 1}"
    me = f"{socket.gethostname()}:{os.getpid()}"
    assert store.try_acquire_lease(ROUND_LEASE, dead, T0, 90)

    async def work() -> str:
        return "ran"

    # Long before the TTL runs out: the dead holder cannot renew, so it is not waited for.
    soon = T0 + timedelta(seconds=1)
    assert asyncio.run(under_round_lease(store, me, work, clock=lambda: soon, ttl_s=90)) == (
        True,
        "ran",
    )


def test_a_live_local_holder_keeps_its_lease(store: Store) -> None:
    import os
    import socket

    alive = f"{socket.gethostname()}:{os.getppid()}"
    assert store.try_acquire_lease(ROUND_LEASE, alive, T0, 90)

    async def work() -> str:
        return "ran"

    me = f"{socket.gethostname()}:{os.getpid()}"
    outcome = asyncio.run(under_round_lease(store, me, work, clock=lambda: T0, ttl_s=90))
    assert outcome == (False, None)
