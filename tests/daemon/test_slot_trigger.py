"""Rounds fire at every slot's start, on every replica at once, whenever each one started.

APScheduler's ``IntervalTrigger`` counts each fire time on from the previous one, so a round run at
start-up put every later round at the phase of the process's start: two replicas started a second
apart fired a second apart in every slot, and the first could claim every model before the other
woke (it happened in CI: one replica ran each slot alone for minutes). These properties pin the
slot grid and the trigger that follows it, and the catch-up that gives a slot whose start the
scheduler skipped (a round still running) its round as soon as the runner is free.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from hypothesis import given
from hypothesis import strategies as st

from canary.core.plan import next_slot, overrun_slot, slot_length, slot_of
from canary.rounds.scheduler import build_scheduler
from canary.rounds.slot_trigger import SlotTrigger

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


def _rounds_of_one_runner(
    started: datetime, interval: float, durations: list[float], catch_up: bool = True
) -> list[tuple[datetime, datetime, datetime]]:
    """(slot, start, end) of each round one runner runs, as the daemon's scheduler drives it:
    the job runs at start-up and at every fire time of the trigger, except while it is still
    running (APScheduler's ``max_instances=1`` skips that fire); each pass of the job, a round and
    what follows it, lasts the next of ``durations`` (in slots), and the job runs again at once
    while :func:`overrun_slot` names a slot."""
    trigger, length = SlotTrigger(interval), slot_length(interval)
    rounds: list[tuple[datetime, datetime, datetime]] = []
    fire: datetime | None = started
    free_at = started
    for duration in durations:
        assert fire is not None
        while fire < free_at:  # fires while the job runs are skipped
            fire = trigger.get_next_fire_time(fire, fire)
            assert fire is not None
        start = fire
        while True:  # one run of the job
            slot = slot_of(start, interval)
            end = start + length * duration
            rounds.append((slot, start, end))
            late = overrun_slot(slot, end, interval) if catch_up else None
            free_at = end
            if late is None or len(rounds) == len(durations):
                break
            start = end
        if len(rounds) == len(durations):
            break
        fire = trigger.get_next_fire_time(fire, fire)
    return rounds


@given(
    started=moments,
    interval=intervals,
    durations=st.lists(
        st.floats(min_value=0.0, max_value=3.5, allow_nan=False), min_size=1, max_size=30
    ),
)
def test_every_slot_gets_one_round_unless_a_single_round_spans_all_of_it(
    started: datetime, interval: float, durations: list[float]
) -> None:
    rounds = _rounds_of_one_runner(started, interval, durations)
    length = slot_length(interval)
    slots = [slot for slot, _, _ in rounds]
    assert all(slot_of(start, interval) == slot for slot, start, _ in rounds)
    assert len(set(slots)) == len(slots)  # never two rounds of one slot
    slot = slots[0] + length
    while slot < slots[-1]:
        spanned = any(start < slot and end >= slot + length for _, start, end in rounds)
        assert (slot in slots) != spanned, slot
        slot += length


def test_without_the_catch_up_a_round_longer_than_its_slot_costs_the_next_slot() -> None:
    started = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
    durations = [1.3] * 6  # each round 1.3 slots long
    kept = [slot for slot, _, _ in _rounds_of_one_runner(started, 15, durations)]
    skipped = [slot for slot, _, _ in _rounds_of_one_runner(started, 15, durations, False)]
    length = slot_length(15)
    # back to back: slot 4 passes entirely inside the round run late in slot 3
    assert kept == [started + length * i for i in (0, 1, 2, 3, 5, 6)]
    assert skipped == [started + length * i for i in (0, 2, 4, 6, 8, 10)]


@given(ran=moments, interval=intervals, after=st.floats(min_value=0.0, max_value=4.0))
def test_overrun_slot_names_the_current_slot_only_once_the_rounds_own_has_ended(
    ran: datetime, interval: float, after: float
) -> None:
    slot = slot_of(ran, interval)
    now = ran + slot_length(interval) * after
    current = slot_of(now, interval)
    assert overrun_slot(slot, now, interval) == (current if current != slot else None)
