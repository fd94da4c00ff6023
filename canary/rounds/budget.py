"""The day's probe budget for one replica's round, reserved in the store (replicas share it).

For each model it claims, a replica reads what all replicas reserved today, asks the core
(:func:`canary.core.budget.plan_budget`) what fits in the rest, and reserves that estimate by
compare-and-set, planning again when another replica reserved in between; a finished model gives
back what its estimate did not use. So replicas together never plan more than the day's budget.
The day's alert (:func:`canary.core.alerts.budget_alert`) goes out once, whichever replica sees
the first skip: the store records it with its audit row by compare-and-set on the last alert.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from canary.config.settings import ModelSettings
from canary.core.alerts import budget_alert
from canary.core.budget import BudgetCandidate, BudgetPlan, day_start, plan_budget, priority_of
from canary.core.cost import ESTIMATE_PROMPT_TOKENS, estimate_round_cost
from canary.core.events import Event
from canary.core.floor import Publication
from canary.core.identity import Listed, excluded_by
from canary.core.model import Endpoint, EndpointState, Layer
from canary.store.repository import Store

_ATTEMPTS = 20


class BudgetContention(RuntimeError):
    """Other replicas kept changing the day's reservation while this one planned."""


@dataclass
class DayBudget:
    store: Store
    limit_usd: float
    day: str  # YYYY-MM-DD, UTC
    spent_before_usd: float  # what finished rounds spent today before the ledger row existed

    @classmethod
    def of(cls, store: Store, limit_usd: float, now: datetime) -> DayBudget:
        start = day_start(now)
        spent = sum(store.round_spend(start).values())  # as status and the API count it
        return cls(store, limit_usd, start.date().isoformat(), spent)

    def reserve(self, candidates: Sequence[BudgetCandidate], rng_seed: int) -> BudgetPlan:
        """Plan one model's probes on what is left today and reserve their estimate."""
        cost = {(c.model, c.tag): max(c.estimated_cost_usd, 0.0) for c in candidates}
        for _ in range(_ATTEMPTS):
            reserved = self.store.budget_reserved(self.day, self.spent_before_usd)
            plan = plan_budget(candidates, max(0.0, self.limit_usd - reserved), rng_seed)
            amount = sum(cost[key] for key in plan.probe)
            if self.store.reserve_budget(self.day, reserved, amount):
                return plan
        raise BudgetContention(f"the budget of {self.day} kept changing while planning")

    def reserve_within(self, amount_usd: float, allowance: Callable[[float], float | None]) -> bool:
        """Reserve ``amount_usd`` if it fits what ``allowance`` leaves, given what the day has
        reserved so far (None: nothing); False when it does not fit or the ledger kept moving."""
        for _ in range(_ATTEMPTS):
            reserved = self.store.budget_reserved(self.day, self.spent_before_usd)
            left = allowance(reserved)
            if left is None or amount_usd > left:
                return False
            if self.store.reserve_budget(self.day, reserved, amount_usd):
                return True
        return False

    def settle(self, reserved_usd: float, spent_usd: float) -> None:
        """Give back the part of a finished model's reservation it did not spend."""
        self.store.release_budget(self.day, reserved_usd - spent_usd)

    def alert(
        self,
        model: str,
        skipped: Sequence[tuple[str, str]],
        now: datetime,
        *,
        actor: str,
        policy_version: str,
        round_id: int | None = None,
    ) -> Event | None:
        """The budget alert of a round that skipped endpoints, recorded (with its audit row), or
        None when the day's alert went out already. Decided on the last alert the store knows
        and recorded only if it is still the last: a replica that lost the race decides again on
        the winner's alert, which is today's."""
        for _ in range(_ATTEMPTS):
            last = self.store.last_budget_alert()
            event = budget_alert(model, skipped, self.limit_usd, last, now)
            if event is None:
                return None
            if self.store.record_budget_alert(
                self.day,
                event,
                last_alert_at=last,
                actor=actor,
                policy_version=policy_version,
                at=now,
                round_id=round_id,
            ):
                return event
        raise BudgetContention(f"the budget alert of {self.day} kept changing while deciding")


def affordable(
    model: ModelSettings,
    endpoints: Sequence[Endpoint],
    states: Mapping[str, EndpointState],
    published: Publication,
    budget: DayBudget | None,
    index: int,
    *,
    probes_of: Callable[[Endpoint], int],
    max_tokens: int,
) -> tuple[list[Endpoint], list[tuple[str, str]], float]:
    """What this round can afford, and the estimate it reserved. The sample of unprotected
    endpoints is seeded by the round's slot: the same on every replica, and a different one
    every round, so no endpoint is skipped all day long."""
    if budget is None:
        return list(endpoints), [], 0.0
    per_endpoint = {
        e.tag: estimate_round_cost([e], probes_of(e), ESTIMATE_PROMPT_TOKENS, max_tokens)
        for e in endpoints
    }
    human = [e for e in published.entries if e.layer in (Layer.builtin, Layer.runtime)]
    candidates = [
        BudgetCandidate(
            model.id,
            e.tag,
            priority_of(
                states.get(e.tag),
                control=e.tag in model.positive_controls,
                excluded=bool(excluded_by(human, Listed.of(e), published.at)),
            ),
            per_endpoint[e.tag],
        )
        for e in endpoints
    ]
    plan = budget.reserve(candidates, rng_seed=index)
    chosen_tags = {tag for _, tag in plan.probe}
    skipped = [(tag, reason) for _, tag, reason in plan.skipped]
    reserved = sum(per_endpoint[t] for t in chosen_tags)
    return [e for e in endpoints if e.tag in chosen_tags], skipped, reserved
