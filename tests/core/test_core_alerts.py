"""Operator alerts decided in the core: the budget's once a budget day, the drift that is audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from canary.core.alerts import budget_alert, drift_audit
from canary.core.drift import DriftChange
from canary.core.model import EventKind, Look

M = "acme/roleplay-1"
NOW = datetime(2026, 4, 2, 9, 30, tzinfo=UTC)
SKIPPED = [("rest-a", "budget: not sampled endpoint needs ~$0.0100")]


@pytest.mark.parametrize(
    ("last_alert_at", "alerts"),
    [
        (None, True),  # never alerted
        (NOW - timedelta(hours=1), False),  # earlier the same budget day
        (datetime(2026, 4, 2, tzinfo=UTC), False),  # at the very start of the day
        (NOW - timedelta(hours=10), True),  # less than 24 h ago, but the day before
        (NOW - timedelta(days=3), True),
    ],
)
def test_the_budget_alerts_once_a_budget_day(last_alert_at: datetime | None, alerts: bool) -> None:
    event = budget_alert(M, SKIPPED, 5.0, last_alert_at, NOW)
    assert (event is not None) is alerts


def test_a_budget_alert_names_what_was_skipped_and_why() -> None:
    event = budget_alert(M, SKIPPED, 5.0, None, NOW)
    assert event is not None and event.kind is EventKind.budget and event.model == M
    assert event.detail == {
        "skipped": ["rest-a"], "reason": SKIPPED[0][1], "daily_budget_usd": 5.0, "alert": True,
    }  # fmt: skip


def test_a_round_that_skipped_nothing_raises_no_budget_alert() -> None:
    assert budget_alert(M, [], 5.0, None, NOW) is None


def test_only_drift_that_can_break_routing_is_audited() -> None:
    changes = [
        DriftChange(M, "alpha", "context_length", 8192, 4096, False, None),
        DriftChange(M, "bravo", "presence", "present", None, True, "bravo vanished"),
    ]
    [row] = drift_audit(M, changes, Look.round(7, None))
    assert (row.kind, row.tag, row.evidence) == (EventKind.drift, "bravo", (Look.round(7, None),))
    assert row.detail["reason"] == "bravo vanished" and row.detail["alert"] is True
