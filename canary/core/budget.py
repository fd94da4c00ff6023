"""Which endpoints a round can afford to probe under the daily budget. Pure.

Positive controls are never skipped: without them the refusal probe proves nothing. Then, in
order of protection: quarantined endpoints (priority 0, their recovery must be seen), suspects
(priority 1, a failing count in progress), a deterministic random sample of the rest (priority 2)
that fits, and last the endpoints a human entry (built-in or runtime) already excludes (priority
3: their evidence changes no route). Nothing is skipped silently: every skipped endpoint comes
with its reason. A skipped endpoint is "no evidence" for the state machine (frozen, like a
transport error).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from canary.core.model import EndpointState

CONTROL = -1
QUARANTINED = 0
SUSPECT = 1
REST = 2
EXCLUDED = 3


def priority_of(
    state: EndpointState | None, *, control: bool = False, excluded: bool = False
) -> int:
    """Controls always; quarantined first (recovery must be seen), then suspects (a failing
    count), then the rest, and last what a human entry already excludes."""
    if control:
        return CONTROL
    if state is not None and state.quarantined_until is not None:
        return QUARANTINED
    if excluded:
        return EXCLUDED
    if state is not None and state.failing_streak > 0:
        return SUSPECT
    return REST


def day_start(now: datetime) -> datetime:
    """The start of ``now``'s budget day: the budget is a UTC day's."""
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@dataclass(frozen=True)
class BudgetCandidate:
    model: str
    tag: str
    priority: int  # -1 control, 0 quarantined, 1 suspect, 2 rest, 3 excluded by a human entry
    estimated_cost_usd: float


@dataclass(frozen=True)
class BudgetPlan:
    probe: tuple[tuple[str, str], ...]  # (model, tag), in the order they were chosen
    skipped: tuple[tuple[str, str, str], ...]  # (model, tag, reason)
    exceeded: bool  # the whole round did not fit: something was (or may have been) cut


def plan_budget(
    candidates: Sequence[BudgetCandidate], remaining_usd: float | None, rng_seed: int
) -> BudgetPlan:
    """Choose what to probe with ``remaining_usd`` left (None: no budget, probe everything).

    When the whole round fits, every candidate is probed in the given order. Otherwise controls
    are taken whatever they cost, then the protected groups (priority 0, then 1, each by model
    then tag) greedily while their estimated cost fits; then the rest, shuffled by
    ``random.Random(rng_seed)`` after sorting by (model, tag) so the sample depends only on the
    seed and the candidates, greedily while they fit; then the excluded ones, likewise. A
    candidate that does not fit is skipped and the next, cheaper one may fit.
    """
    if remaining_usd is None:
        return BudgetPlan(tuple((c.model, c.tag) for c in candidates), (), False)
    total = sum(max(c.estimated_cost_usd, 0.0) for c in candidates)
    if total <= remaining_usd:
        return BudgetPlan(tuple((c.model, c.tag) for c in candidates), (), False)
    ordered = sorted(candidates, key=lambda c: (c.priority, c.model, c.tag))
    protected = [c for c in ordered if c.priority < REST]
    rest = [c for c in ordered if c.priority == REST]
    excluded = [c for c in ordered if c.priority > REST]
    shuffle = random.Random(rng_seed).shuffle
    shuffle(rest)
    shuffle(excluded)
    left = max(remaining_usd, 0.0)
    probe: list[tuple[str, str]] = []
    skipped: list[tuple[str, str, str]] = []
    for c in protected + rest + excluded:
        cost = max(c.estimated_cost_usd, 0.0)
        if c.priority == CONTROL or cost <= left:
            probe.append((c.model, c.tag))
            left -= cost
        else:
            skipped.append((c.model, c.tag, _reason(c, cost, left, remaining_usd)))
    return BudgetPlan(tuple(probe), tuple(skipped), True)


def _reason(c: BudgetCandidate, cost: float, left: float, remaining: float) -> str:
    kind = {QUARANTINED: "quarantined", SUSPECT: "suspect", EXCLUDED: "excluded"}.get(
        c.priority, "not sampled"
    )
    return (
        f"budget: {kind} endpoint needs ~${cost:.4f}, ${left:.4f} left "
        f"of ${max(remaining, 0.0):.4f} remaining today"
    )
