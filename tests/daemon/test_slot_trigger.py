"""Rounds fire at every slot's start, on every replica at once, whenever each one started.

APScheduler's ``IntervalTrigger`` counts each fire time on from the previous one, so a round run at
start-up put every later round at the phase of the process's start: two replicas started a second
apart fired a second apart in every slot, and the first could claim every model before the other
woke (it happened in CI: one replica ran each slot alone for minutes). These properties pin the
slot grid and the trigger that follows it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from hypothesis import given
from hypothesis import strategies as st

from canary.core.plan import next_slot, slot_length, slot_of
from canary.scheduler import build_scheduler
from canary.slot_trigger import SlotTrigger

intervals = st.one_of(
    st.sampled_from([0.05, 0.1, 0.15, 1.0, 5.0, 15.0, 60.0]),
    st.floats(min_value=0.01, max_value=240.0, allow_nan=False),
)
moments = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
)
# how late the scheduler may wake after a fire time, as a share of the slot
lateness = st.floats(min_value=0.0, max_value=0.99, allow_nan=False)


@given(now=moments, interval=intervals)
def test_a_moment_lies_in_its_slot_and_a_slots_start_in_its_own_slot(
    now: datetime, interval: float
) -> None:
    start, length = slot_of(now, interval), slot_length(interval)
    assert start <= now < start + length
    assert slot_of(start, interval) == start
    assert slot_of(start + length, interval) == start + length == next_slot(now, interval)
    assert slot_of(start - timedelta(microseconds=1), interval) == start - length


def _fire_times(
    started: datetime, interval: float, late: list[float], count: int
) -> list[datetime]:
    """What APScheduler asks of the trigger: a first run at ``started`` (the round run at
    start-up), then each next fire time from the previous one, the scheduler waking a little
    late each time (``late``, shares of the slot)."""
    trigger, length = SlotTrigger(interval), slot_length(interval)
    fired, now = [started], started
    for i in range(count):
        due = trigger.get_next_fire_time(fired[-1], now)
        assert due is not None
        now = due + length * late[i % len(late)]
        fired.append(due)
    return fired[1:]


@given(
    first=moments,
    offset=st.floats(min_value=0.0, max_value=5.0, allow_nan=False),  # in slots
    interval=intervals,
    late=st.lists(lateness, min_size=1, max_size=5),
)
def test_replicas_started_at_different_moments_fire_at_the_same_slot_starts(
    first: datetime, offset: float, interval: float, late: list[float]
) -> None:
    length = slot_length(interval)
    second = first + length * offset
    one = _fire_times(first, interval, late, 12)
    two = _fire_times(second, interval, late[::-1], 12)
    for fired, started in ((one, first), (two, second)):
        assert fired[0] == next_slot(started, interval)
        assert all(slot_of(t, interval) == t for t in fired)
        assert all(b - a == length for a, b in zip(fired, fired[1:], strict=False))
    shared = set(one) & set(two)
    assert shared and all(t in shared for t in one if t >= two[0])


@given(now=moments, interval=intervals)
def test_before_its_first_fire_the_trigger_waits_for_the_next_slot_start(
    now: datetime, interval: float
) -> None:
    trigger = SlotTrigger(interval)
    due = trigger.get_next_fire_time(None, now)
    assert due is not None and now <= due < now + slot_length(interval)
    assert slot_of(due, interval) == due
    start = slot_of(now, interval)
    assert trigger.get_next_fire_time(None, start) == start  # a slot's start fires at once


def test_the_daemons_round_job_runs_at_start_up_then_on_the_slot_grid() -> None:
    before = datetime.now(UTC)
    scheduler: BackgroundScheduler = build_scheduler(0.05, lambda: None, lambda: None)
    scheduler.start(paused=True)
    try:
        job = scheduler.get_job("round")
        assert isinstance(job.trigger, SlotTrigger)
        assert job.trigger.interval_minutes == 0.05
        assert before <= job.next_run_time <= datetime.now(UTC)
        after_first = job.trigger.get_next_fire_time(job.next_run_time, job.next_run_time)
        assert after_first == next_slot(job.next_run_time, 0.05)
    finally:
        scheduler.shutdown(wait=False)
