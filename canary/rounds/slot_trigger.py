"""An APScheduler trigger that fires at the start of every slot (:func:`canary.core.plan.slot_of`).

APScheduler's own ``IntervalTrigger`` counts each fire time on from the one before: after a first
round run at start-up, every later round ran at the phase of the process's start, not at the
slots' starts. Replicas started at different times then fired at different moments of each slot,
and the first to fire could claim every model before the others woke: they shared nothing. This
trigger computes each fire time from the slot grid itself, so all replicas fire together.
"""

from __future__ import annotations

from datetime import UTC, datetime

from apscheduler.triggers.base import BaseTrigger

from canary.core.plan import next_slot, slot_of


class SlotTrigger(BaseTrigger):  # type: ignore[misc]  # apscheduler ships no types
    __slots__ = ("interval_minutes",)

    def __init__(self, interval_minutes: float) -> None:
        self.interval_minutes = interval_minutes

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        """The next slot's start: the first after ``previous_fire_time`` (whether or not that was
        a slot's start), or, before the first fire, the first at or after ``now``."""
        if previous_fire_time is not None:
            return next_slot(previous_fire_time.astimezone(UTC), self.interval_minutes)
        now = now.astimezone(UTC)
        start = slot_of(now, self.interval_minutes)
        return start if start == now else next_slot(now, self.interval_minutes)

    def __str__(self) -> str:
        return f"slot[{self.interval_minutes:g} min]"

    def __repr__(self) -> str:
        return f"SlotTrigger(interval_minutes={self.interval_minutes!r})"
