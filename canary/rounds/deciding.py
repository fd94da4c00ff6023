"""Persisting a model's decisions: the shell between canary.core and the store.

:class:`ModelDecisions` asks the core and writes what it returns, for a round
(:meth:`~ModelDecisions.decide_round`), for the floor on the published list
(:meth:`~ModelDecisions.sync_floor`) and for quarantines whose end has come between rounds
(:meth:`~ModelDecisions.expire_due`). The round runner, the daemon's housekeeping and the
property tests use this one path.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.events import Event
from canary.core.floor import Publication
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer, Look, RoundVerdict
from canary.core.policy import PolicyRules
from canary.core.quarantine import Decision, decide_model, expire_due
from canary.store.repository import Store
from canary.store.rows import FloorOf

ACTOR = "canary"
_ATTEMPTS = 5


class DecisionConflict(RuntimeError):
    """The decision kept losing its compare-and-set against concurrent changes."""

    def __init__(self, model: str, round_id: int | None) -> None:
        super().__init__(f"could not apply the decision of round {round_id} for {model}")
        self.model = model
        self.round_id = round_id


@dataclass
class ModelDecisions:
    store: Store
    builtin: Sequence[Exclusion]
    rules: PolicyRules
    policy_version: str
    # each watched model's positive controls (never usable capacity; see canary.core.floor)
    controls: Mapping[str, Controls] = field(default_factory=dict)

    def builtin_for(self, model: str) -> list[Exclusion]:
        return [e for e in self.builtin if e.model == model]

    def controls_for(self, model: str) -> Controls:
        return self.controls.get(model, NO_CONTROLS)

    def publication(self, model: str, floor: int, now: datetime) -> Publication:
        layers = self.store.model_layers([model], now)[model]
        return layers.publish(
            model, self.builtin_for(model), floor, now, controls=self.controls_for(model)
        )

    def decide_round(
        self,
        model: str,
        *,
        round_id: int,
        listing: Sequence[Listed],
        verdicts: Mapping[str, RoundVerdict],
        skipped: Collection[str],
        round_events: Sequence[Event],
        floor: int,
        now: datetime,
        holder: str | None = None,
        look: Look | None = None,
    ) -> Decision:
        """Decide the round (a look started at ``now``; ``look``: a focused check's) on the layers as they stand and write it
        in one transaction, deciding again when an operator changed the model's layers in
        between. With ``holder``, only while that claimer still runs the round (``RoundLost``
        otherwise)."""
        look = look or Look.round(round_id, now)
        for _ in range(_ATTEMPTS):
            guard = self.store.guard_version(model)
            before = self.store.load_states(model)
            layers = self.store.model_layers([model], now)[model]
            windows = self.store.active_exclusions(model, now, Layer.maintenance)
            decision = decide_model(
                model,
                before,
                verdicts,
                look=look,
                now=now,
                rules=self.rules,
                capacity_floor=floor,
                listing=listing,
                human=[*self.builtin_for(model), *layers.runtime],
                quarantines=layers.quarantines,
                skipped=skipped,
                controls=self.controls_for(model),
                maintenance=windows,
            )
            if self.store.apply_decision(
                round_id=round_id,
                model=model,
                before=before,
                after=decision.states,
                events=[*round_events, *decision.events],
                quarantines_started=decision.quarantines,
                releases=decision.releases,
                actor=ACTOR,
                policy_version=self.policy_version,
                at=now,
                guard=guard,
                holder=holder,
            ):
                return decision
        raise DecisionConflict(model, round_id)

    def sync_floor(
        self, models: Sequence[str], floors: Mapping[str, int], now: datetime
    ) -> list[Event]:
        """Record what the floor does on each model's published list (withheld quarantines, floor
        episodes): one read of every model's layers, then each model with something to record
        read, reconciled and written in one transaction under its guard
        (:meth:`canary.store.Store.sync_floors`). Idempotent; any replica may run it. Returns
        the events it recorded."""
        held = [
            FloorOf(model, tuple(self.builtin_for(model)), floors[model], self.controls_for(model))
            for model in dict.fromkeys(models)
        ]
        return self.store.sync_floors(held, now, ACTOR, self.policy_version)

    def due_to_expire(self, models: Sequence[str], now: datetime) -> list[str]:
        """The models among ``models`` whose states :meth:`expire_due` would change at ``now``
        (an ended quarantine, a pending language past the max age), from ONE read of all their
        states; :meth:`expire_due` reads each of them again and decides on its guard version."""
        states = self.store.load_states_of(list(dict.fromkeys(models)))
        max_age = self.rules.streak_max_age
        return [m for m, of_model in states.items() if expire_due(of_model, now, max_age)[0]]

    def expire_due(self, model: str, now: datetime) -> tuple[Event, ...]:
        """Between rounds: release the quarantines whose end has come (their `release` rows go
        out when ``until`` passes, not at the next round) and drop pending languages older than
        the max age (a round after a long outage does not repeat a stale one). Made on the
        model's guard version, like a round's decision."""
        for _ in range(_ATTEMPTS):
            guard = self.store.guard_version(model)
            before = self.store.load_states(model)
            after, ends, events = expire_due(before, now, self.rules.streak_max_age)
            if not after:
                return ()
            if self.store.apply_decision(
                round_id=None,
                model=model,
                before=before,
                after=after,
                events=events,
                releases=ends,
                actor=ACTOR,
                policy_version=self.policy_version,
                at=now,
                guard=guard,
            ):
                return events
        raise DecisionConflict(model, None)
