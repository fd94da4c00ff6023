"""Events raised to operators that are not about a provider's quality. Pure.

- :func:`operator_alert` — auth/config or bad-request answers: our problem, never a provider's.
- :func:`listing_alert` — the endpoints list itself failed for one of those reasons.
- :func:`budget_alert` — the daily budget made a round skip endpoints: one alert per budget day
  (UTC), whichever replica and model see the first skip.
- :func:`once_a_day` — marks an event as an alert only when none was sent in the last day.
- :func:`drift_events` — metadata changes as events; :func:`drift_audit` — the ones recorded as
  audit rows (and notified): those that can break routing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from canary.core.budget import day_start
from canary.core.drift import DriftChange
from canary.core.events import BudgetSkipped, ControlMissing, Drifted, ListingAlert, OperatorAlert
from canary.core.model import DAY, OPERATOR_TRANSPORTS, Look, Observation, Transport


def operator_alert(model: str, observations: Sequence[Observation]) -> OperatorAlert | None:
    ours = [o for o in observations if o.transport in OPERATOR_TRANSPORTS]
    if not ours:
        return None
    sample = ours[0]
    return OperatorAlert(
        model=model,
        transports=tuple(sorted({o.transport.value for o in ours})),
        count=len(ours),
        status=sample.status,
        error=sample.error,
    )


def listing_alert(model: str, transport: Transport, error: str) -> ListingAlert | None:
    if transport not in OPERATOR_TRANSPORTS:
        return None  # the provider side: the round is abandoned, nothing to raise
    return ListingAlert(model=model, listing=error)


def budget_alert(
    model: str,
    skipped: Sequence[tuple[str, str]],
    daily_budget_usd: float,
    last_alert_at: datetime | None,
    now: datetime,
) -> BudgetSkipped | None:
    """The alert of a round the budget made skip endpoints (``skipped``: tag, reason), unless a
    budget alert went out on ``now``'s budget day already (``last_alert_at``: the latest one,
    sent by any replica for any model). The budget is a day's (UTC), so is its alert: a new day
    alerts again, however soon after the last alert."""
    if not skipped or (last_alert_at is not None and last_alert_at >= day_start(now)):
        return None
    return BudgetSkipped(
        model=model,
        skipped=tuple(tag for tag, _ in skipped),
        reason=skipped[0][1],
        daily_budget_usd=daily_budget_usd,
    )


def once_a_day(
    event: ControlMissing, last_alert_at: datetime | None, now: datetime
) -> ControlMissing:
    """The event, marked ``alert`` when no alert of its kind went out in the last day."""
    return replace(event, alert=_due(last_alert_at, now))


def _due(last_alert_at: datetime | None, now: datetime) -> bool:
    return last_alert_at is None or now - last_alert_at >= DAY


def drift_events(model: str, changes: Sequence[DriftChange], look: Look) -> list[Drifted]:
    return [
        Drifted(
            model=model,
            tag=change.tag,
            field=change.field,
            old=change.old,
            new=change.new,
            alert=change.alert,
            reason=change.reason,
            evidence=(look,),
        )
        for change in changes
    ]


def drift_audit(model: str, changes: Sequence[DriftChange], look: Look) -> list[Drifted]:
    """The audit rows of a round's drift: the changes that can break routing (alerts). The
    others are kept in the drift log only."""
    return drift_events(model, [c for c in changes if c.alert], look)
