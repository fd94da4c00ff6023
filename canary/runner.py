"""One round: list → plan → probe → judge → decide → persist → publish.

Every rule lives in canary.core; this module only moves data between the wire, the rules and
the store. A round is claimed per (model, slot) in the store, so replicas never run it twice,
and a model's decisions and audit rows are written in one transaction.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from canary.core.budget import BudgetCandidate, plan_budget, priority_of
from canary.core.cost import estimate_round_cost
from canary.core.drift import diff_snapshots, snapshot_of
from canary.core.model import (
    OPERATOR_TRANSPORTS,
    Contract,
    Endpoint,
    EndpointState,
    Event,
    EventKind,
    RoundVerdict,
    Verdict,
)
from canary.core.plan import round_index
from canary.core.quarantine import decide_model
from canary.core.verdict import judge_round
from canary.logs import get_logger
from canary.openrouter.client import ListingError, OpenRouterClient
from canary.prober import EndpointProbing, Prober
from canary.settings import QUANTIZATION_ORDER, ModelSettings, Settings
from canary.wiring import Wiring

log = get_logger("canary.runner")


@dataclass
class ModelRound:
    """What one model's round did, for the drill, the demo and the logs."""

    model: str
    round_id: int | None
    at: datetime
    status: str = "finished"
    verdicts: dict[str, RoundVerdict] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    cost_usd: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    probings: list[EndpointProbing] = field(default_factory=list)
    decided: bool = False  # the decision (states, quarantines, audit rows) was committed
    error: str | None = None  # why the round failed, when it did


def runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def slot_of(now: datetime, interval_minutes: float) -> datetime:
    """The scheduled time of the round that `now` belongs to: aligned, the same on every replica."""
    step = interval_minutes * 60
    return datetime.fromtimestamp((now.timestamp() // step) * step, tz=UTC)


class RoundRunner:
    def __init__(
        self,
        wiring: Wiring,
        client: OpenRouterClient,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holder: str | None = None,
    ) -> None:
        self.w = wiring
        self.settings: Settings = wiring.settings
        self.client = client
        self.clock = clock
        self.holder = holder or runner_id()
        self.prober = Prober(
            client,
            wiring.probes,
            wiring.analyze,
            languages=self.settings.languages,
            ttft_threshold_s=self.settings.ttft_threshold_s,
            ttft_samples=self.settings.ttft_samples,
            max_tokens=self.settings.openrouter.max_tokens,
            concurrency=self.settings.concurrency,
            per_provider_concurrency=self.settings.per_provider_concurrency,
        )

    async def run(self, scheduled_at: datetime | None = None) -> list[ModelRound]:
        """Run one round for every watched model. `scheduled_at` defaults to the current slot.

        A model whose round fails is reported ``abandoned`` (with ``error``) and the other models
        still run: one broken model never stops the rest.
        """
        now = self.clock()
        slot = scheduled_at or slot_of(now, self.settings.interval_minutes)
        stale_before = now - timedelta(minutes=self.settings.interval_minutes * 3)
        self.w.store.abandon_stale_rounds(stale_before, now=now)
        budget = self._budget_plan(now)
        # Load the language models off the event loop before any probe is in flight: loading
        # them mid-round would stall the loop and inflate every concurrent ttft measurement.
        await asyncio.to_thread(self.w.analyzer.warm)
        # The models' rounds run side by side (each is claimed, decided and written on its own).
        done = await asyncio.gather(
            *(self.run_model(m, slot, now, budget) for m in self.settings.models),
            return_exceptions=True,
        )
        failures = [d for d in done if isinstance(d, BaseException)]
        if failures:  # only the store failing before a claim gets here: nothing was written
            raise failures[0]
        return [d for d in done if isinstance(d, ModelRound)]

    async def run_model(
        self, model: ModelSettings, slot: datetime, now: datetime, budget: _Budget | None = None
    ) -> ModelRound:
        """Claim and run one model's round. A failure inside the round never escapes: the report
        carries ``error``, and the round is recorded ``abandoned`` (nothing of its decision was
        written, so the next round starts from the states as they were) or, when the failure
        came after the decision's transaction committed, ``finished`` with the error noted."""
        store = self.w.store
        started = time.perf_counter()
        round_id = store.claim_round(
            model.id,
            slot,
            self.holder,
            self.w.policy_version,
            dict(self.w.probes.checksums),
            started_at=self.clock(),
        )
        report = ModelRound(model.id, round_id, now)
        if round_id is None:
            report.status = "claimed_elsewhere"
            return report
        try:
            await self._run_claimed(model, round_id, slot, now, report, budget)
        except Exception as exc:
            self._fail_round(model.id, round_id, report, exc)
            return report
        self.w.metrics.observe_round(time.perf_counter() - started, report.cost_usd)
        return report

    def _fail_round(self, model: str, round_id: int, report: ModelRound, exc: Exception) -> None:
        """Close a round that raised. Its decision is one transaction: either it was applied
        (the round stays ``finished``, with the error in its detail) or nothing of it was."""
        report.error = f"{type(exc).__name__}: {exc}"
        report.status = "finished" if report.decided else "abandoned"
        log.error(
            "round_failed",
            model=model,
            round_id=round_id,
            decided=report.decided,
            error=repr(exc),
        )
        try:
            self.w.store.finish_round(
                round_id,
                report.status,
                cost_usd=report.cost_usd,
                skipped=[{"provider": t, "reason": r} for t, r in report.skipped],
                detail={"error": type(exc).__name__},
                at=self.clock(),
            )
        except Exception as again:  # the store is down: the round stays running, then stale
            log.error("round_close_failed", model=model, round_id=round_id, error=repr(again))

    async def _run_claimed(
        self,
        model: ModelSettings,
        round_id: int,
        slot: datetime,
        now: datetime,
        report: ModelRound,
        budget: _Budget | None,
    ) -> None:
        store = self.w.store
        try:
            endpoints = await self.client.list_endpoints(model.id)
        except ListingError as exc:
            events = (
                [Event(EventKind.operator_alert, model.id, None, {"listing": str(exc)})]
                if (exc.transport in OPERATOR_TRANSPORTS)
                else []
            )
            for event in events:
                store.record_audit(event, "canary", self.w.policy_version, now, round_id=round_id)
            report.events += events
            store.finish_round(
                round_id, "abandoned", detail={"listing": exc.transport.value}, at=self.clock()
            )
            report.status = "abandoned"
            log.warning("listing_failed", model=model.id, transport=exc.transport.value)
            return

        report.events += self._record_drift(model, round_id, endpoints, now)
        states = store.load_states(model.id)
        index = round_index(slot.timestamp(), self.settings.interval_minutes)
        chosen, skipped = self._apply_budget(model.id, endpoints, states, budget, index)
        report.skipped = skipped
        probings = await self.prober.probe_endpoints(chosen, states, index)
        report.probings = probings
        observations = [o for p in probings for o in p.observations]
        report.cost_usd = sum(
            self.w.cost_of(o, p.endpoint) for p in probings for o in p.observations
        )
        store.record_observations(round_id, model.id, observations, now)
        for o in observations:
            if o.ttft_s is not None:
                self.w.metrics.observe_ttft(model.id, o.tag, o.ttft_s)

        outcome = judge_round(
            model.id,
            {p.endpoint.tag: p.results for p in probings},
            positive_controls=model.positive_controls,
            rules=self.w.rules,
        )
        verdicts = dict(outcome.verdicts)
        for tag, _reason in skipped:
            verdicts[tag] = RoundVerdict(model.id, tag, Verdict.skipped, ())
        store.record_verdicts(round_id, model.id, verdicts)
        for p in probings:
            for result in p.results:
                self.w.metrics.observe_probe(result.contract.value, result.result.value)
        report.verdicts = verdicts

        events = list(outcome.events) + self._operator_alerts(model.id, observations)
        events += self._budget_events(model.id, skipped, budget)
        report.events += events
        await self._decide(model, round_id, endpoints, verdicts, events, now, report)
        store.finish_round(
            round_id,
            "finished",
            cost_usd=report.cost_usd,
            skipped=[{"provider": t, "reason": r} for t, r in skipped],
            at=self.clock(),
        )

    async def _decide(
        self,
        model: ModelSettings,
        round_id: int,
        endpoints: Sequence[Endpoint],
        verdicts: dict[str, RoundVerdict],
        round_events: list[Event],
        now: datetime,
        report: ModelRound,
    ) -> None:
        store = self.w.store
        for _attempt in range(3):
            before = store.load_states(model.id)
            other = {e.tag for e in self.w.builtin_for(model.id)} | {
                e.tag for e in store.active_exclusions(model.id, now)
            }
            decision = decide_model(
                model.id,
                before,
                verdicts,
                round_id=round_id,
                now=now,
                rules=self.w.rules_for(model),
                capacity_floor=model.capacity_floor,
                other_excluded=other,
                all_tags=[e.tag for e in endpoints],
                skipped=[t for t, _ in report.skipped],
            )
            applied = store.apply_decision(
                round_id=round_id,
                model=model.id,
                before=before,
                after=decision.states,
                events=[*round_events, *decision.events],
                quarantines_started=decision.quarantines,
                releases=decision.releases,
                actor="canary",
                policy_version=self.w.policy_version,
                at=now,
            )
            if applied:
                report.decided = True
                report.events += list(decision.events)
                self.w.metrics.set_quarantines(
                    model.id, len(store.active_quarantines(model.id, now))
                )
                return
            log.warning("decision_conflict_retry", model=model.id, round_id=round_id)
        raise RuntimeError(f"could not apply the decision of round {round_id} for {model.id}")

    def _record_drift(
        self, model: ModelSettings, round_id: int, endpoints: Sequence[Endpoint], now: datetime
    ) -> list[Event]:
        store = self.w.store
        before = store.latest_snapshot(model.id)
        after = {e.tag: snapshot_of(e) for e in endpoints}
        price = model.max_price
        changes = diff_snapshots(
            model.id,
            before,
            after,
            max_price=(price.prompt, price.completion) if price else None,
            min_quantization=model.min_quantization,
            capacity_floor=model.capacity_floor,
            quantization_order=QUANTIZATION_ORDER,
        )
        store.record_snapshots(round_id, model.id, endpoints, now)
        store.record_drift(round_id, model.id, changes, now)
        events = []
        for change in changes:
            detail: dict[str, Any] = {
                "field": change.field,
                "old": change.old,
                "new": change.new,
                "alert": change.alert,
                "reason": change.reason,
            }
            event = Event(EventKind.drift, model.id, change.tag, detail, (round_id,))
            if change.alert:
                store.record_audit(event, "canary", self.w.policy_version, now, round_id=round_id)
            events.append(event)
        return events

    def _operator_alerts(self, model: str, observations: Sequence[Any]) -> list[Event]:
        ours = [o for o in observations if o.transport in OPERATOR_TRANSPORTS]
        if not ours:
            return []
        kinds = sorted({o.transport.value for o in ours})
        sample = ours[0]
        return [
            Event(
                EventKind.operator_alert,
                model,
                None,
                {
                    "transports": kinds,
                    "count": len(ours),
                    "status": sample.status,
                    "error": sample.error,
                },
            )
        ]

    # -- budget ------------------------------------------------------------------------------

    def _budget_plan(self, now: datetime) -> _Budget | None:
        limit = self.settings.daily_budget_usd
        if limit is None:
            return None
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        spent = sum(self.w.store.round_spend(day_start).values())  # as status and the API count it
        alerted = bool(self.w.store.audit(since=day_start, limit=1, events=[EventKind.budget]))
        return _Budget(remaining=max(0.0, limit - spent), alerted=alerted)

    def _apply_budget(
        self,
        model: str,
        endpoints: Sequence[Endpoint],
        states: Mapping[str, EndpointState],
        budget: _Budget | None,
        index: int,
    ) -> tuple[list[Endpoint], list[tuple[str, str]]]:
        """What this round can afford. The sample of unprotected endpoints is seeded by the
        round's slot: the same on every replica, and a different one every round, so no
        endpoint is skipped all day long."""
        if budget is None:
            return list(endpoints), []
        per_endpoint = {
            e.tag: estimate_round_cost(
                [e], self._probes_per_endpoint(e), 250, self.settings.openrouter.max_tokens
            )
            for e in endpoints
        }
        candidates = [
            BudgetCandidate(model, e.tag, priority_of(states.get(e.tag)), per_endpoint[e.tag])
            for e in endpoints
        ]
        plan = plan_budget(candidates, budget.remaining, rng_seed=index)
        chosen_tags = {tag for _, tag in plan.probe}
        budget.remaining -= sum(per_endpoint[t] for t in chosen_tags)
        skipped = [(tag, reason) for _, tag, reason in plan.skipped]
        return [e for e in endpoints if e.tag in chosen_tags], skipped

    def _budget_events(
        self, model: str, skipped: list[tuple[str, str]], budget: _Budget | None
    ) -> list[Event]:
        if not skipped or budget is None or budget.alerted:
            return []
        budget.alerted = True  # once a day: the audit row of this alert is what later rounds see
        return [
            Event(
                EventKind.budget,
                model,
                None,
                {
                    "skipped": [t for t, _ in skipped],
                    "reason": skipped[0][1],
                    "daily_budget_usd": self.settings.daily_budget_usd,
                },
            )
        ]

    def _probes_per_endpoint(self, endpoint: Endpoint) -> int:
        extra = sum(
            1 for c in (Contract.schema, Contract.tools) if self.prober.applicable(c, endpoint)
        )
        return self.settings.ttft_samples + 2 + extra


@dataclass
class _Budget:
    remaining: float
    alerted: bool = False


__all__ = ["ModelRound", "RoundRunner", "slot_of"]
