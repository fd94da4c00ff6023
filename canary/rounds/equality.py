"""The equality check (docs/equality.md): is each endpoint's model the one its peers serve?

For each watched model, once per slot of ``[equality] interval_hours`` and by one replica (the
check is claimed in the store like a round): list the endpoints, sample the prompts of
``probes/equality.yaml`` from every tested endpoint through the round's HTTP client, judge them
(:func:`canary.core.equality.judge_equality`, in a thread) and store the advisory results with
their ``equality_outlier`` audit rows in one transaction. Quarantined and excluded endpoints are
tested but never pooled; positive controls and endpoints in a maintenance window are neither. The check spends only what the day's
budget leaves after the day's remaining rounds. It never quarantines and never changes a list.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import JsonValue

from canary.config.equality_set import EqualityPrompts, load_equality_prompts
from canary.config.probe_set import capped_max_tokens
from canary.config.settings import ModelSettings
from canary.core.budget import day_start
from canary.core.cost import ESTIMATE_PROMPT_TOKENS, estimate_round_cost, probe_cost, token_cost
from canary.core.equality import (
    EndpointEquality,
    EqualitySettings,
    Outcome,
    Sampled,
    equality_allowance,
    equality_roles,
    judge_equality,
    rounds_left_today,
)
from canary.core.events import EqualityOutlier, Event
from canary.core.identity import Listed
from canary.core.model import Endpoint, Layer
from canary.core.plan import slot_of
from canary.openrouter.client import ListingError, OpenRouterClient
from canary.rounds.budget import DayBudget
from canary.rounds.deciding import ACTOR
from canary.rounds.dispatch import Dispatcher, provider_of
from canary.rounds.prober import DEFAULT_REQUEST_S
from canary.rounds.runner import runner_id
from canary.rounds.wiring import Wiring, openrouter_client
from canary.service.logs import get_logger
from canary.store import AuditRows

log = get_logger("canary.rounds.equality")
LOST_AFTER = timedelta(hours=1)  # a running check older than this was left by a dead runner
PROMPT_TOKENS = 80  # a request's prompt, for the estimate (system, instruction and opening)
ROUND_PROBES = 7  # an endpoint-round's probes, about (ttft samples and the contracts)


@dataclass
class EqualityReport:
    model: str
    check_id: int | None
    status: str  # finished | skipped | abandoned | claimed_elsewhere
    results: tuple[EndpointEquality, ...] = ()
    events: list[Event] = field(default_factory=list)
    cost_usd: float = 0.0
    detail: str = ""


class EqualityRunner:
    def __init__(
        self,
        wiring: Wiring,
        client: OpenRouterClient,
        *,
        prompts: EqualityPrompts | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holder: str | None = None,
    ) -> None:
        self.w = wiring
        self.settings = wiring.settings
        self.client = client
        self.clock = clock
        self.holder = holder or runner_id()
        self.prompts = prompts or load_equality_prompts(self.settings.probes_dir)
        self.dispatcher = Dispatcher(
            self.settings.concurrency, self.settings.per_provider_concurrency
        )
        e = self.settings.equality
        self.rules = EqualitySettings(level=e.level, min_peers=e.min_peers)

    def recorded_settings(self) -> dict[str, JsonValue]:
        """What a check runs with, stored with it (these settings stay out of the policy
        version: they change no list)."""
        p = self.prompts
        return {
            **asdict(self.rules),
            "interval_hours": self.settings.equality.interval_hours,
            "prompts": len(p.prompts),
            "samples": p.samples,
            "known": len(p.known),
            "max_tokens": p.max_tokens,
            "checksum": p.checksum,
        }

    async def run(self, models: Sequence[ModelSettings] | None = None) -> list[EqualityReport]:
        """Every watched model's check of the current slot (those another runner claimed or
        finished are reported so)."""
        now = self.clock()
        slot = slot_of(now, self.settings.equality.interval_hours * 60)
        chosen = self.settings.models if models is None else models
        return list(await asyncio.gather(*(self.run_model(m, slot, now) for m in chosen)))

    async def run_model(
        self, model: ModelSettings, slot: datetime, now: datetime
    ) -> EqualityReport:
        store = self.w.store
        check = await asyncio.to_thread(
            store.claim_equality, model.id, slot, self.holder, self.recorded_settings(),
            at=now, lost_before=now - LOST_AFTER,
        )  # fmt: skip
        if check is None:
            return EqualityReport(model.id, None, "claimed_elsewhere")
        report = EqualityReport(model.id, check, "finished")
        try:
            await self._run_claimed(model, check, slot, now, report)
        except Exception as exc:  # an advisory check must never take the others down
            log.error("equality_failed", model=model.id, check_id=check, error=repr(exc))
            report.status, report.detail, report.results = "abandoned", type(exc).__name__, ()
            report.events = []
            await asyncio.to_thread(self._finish, check, report, {"error": type(exc).__name__})
        return report

    async def _run_claimed(
        self,
        model: ModelSettings,
        check: int,
        slot: datetime,
        now: datetime,
        report: EqualityReport,
    ) -> None:
        try:
            endpoints = await self.client.list_endpoints(model.id)
        except ListingError as exc:
            report.status, report.detail = "abandoned", f"listing: {exc.transport.value}"
            await asyncio.to_thread(self._finish, check, report, {"listing": exc.transport.value})
            return
        tested, pooled = await asyncio.to_thread(self._roles, model, endpoints, now)
        estimate = sum(self._estimate(e) for e in tested)
        limit = self.settings.daily_budget_usd
        budget = (
            None
            if limit is None
            else await asyncio.to_thread(DayBudget.of, self.w.store, limit, now)
        )
        if budget is not None and not await asyncio.to_thread(
            self._reserve, budget, endpoints, estimate, now
        ):
            report.status, report.detail = "skipped", "budget"
            await asyncio.to_thread(self._finish, check, report, {"budget": round(estimate, 6)})
            log.info("equality_skipped", model=model.id, reason="budget", estimate=estimate)
            return
        sampled: list[tuple[Sampled, float]] = []
        try:
            sampled = list(
                await asyncio.gather(*(self._sample(e, e.tag in pooled) for e in tested))
            )
        finally:  # what the requests did not spend goes back, whatever happened to the check
            if budget is not None:
                await asyncio.to_thread(budget.settle, estimate, sum(c for _, c in sampled))
        report.cost_usd = sum(cost for _, cost in sampled)
        rng = random.Random(f"{model.id}@{slot.isoformat()}")
        report.results = await asyncio.to_thread(
            judge_equality, [s for s, _ in sampled], self.prompts.planned, rng, self.rules
        )
        report.events = [
            _outlier(model.id, check, r) for r in report.results if r.outcome is Outcome.fail
        ]
        await asyncio.to_thread(self._finish, check, report, {}, pooled)
        log.info(
            "equality_checked", model=model.id, tested=len(tested),
            outliers=[r.tag for r in report.results if r.outcome is Outcome.fail],
            cost_usd=round(report.cost_usd, 6),
        )  # fmt: skip

    def _roles(
        self, model: ModelSettings, endpoints: Sequence[Endpoint], now: datetime
    ) -> tuple[list[Endpoint], frozenset[str]]:
        """The endpoints tested and those pooled (:func:`canary.core.equality.equality_roles`)."""
        published = self.w.decisions.publication(model.id, model.capacity_floor, now)
        states = self.w.store.load_states(model.id)
        tested, pooled = equality_roles(
            [Listed.of(e) for e in endpoints],
            controls=model.positive_controls,
            windows=self.w.store.active_exclusions(model.id, now, Layer.maintenance),
            entries=(*published.entries, *published.withheld),
            quarantined={t for t, s in states.items() if s.quarantined_until is not None},
            now=now,
        )
        return [e for e in endpoints if e.tag in tested], pooled

    def _estimate(self, endpoint: Endpoint) -> float:
        """An endpoint-check's cost at most: every request's full ``max_tokens``."""
        p = self.prompts
        out = capped_max_tokens(p.max_tokens, endpoint.max_completion_tokens)
        return (p.planned + len(p.known)) * token_cost(PROMPT_TOKENS, out, endpoint.pricing)

    def _reserve(
        self, budget: DayBudget, endpoints: Sequence[Endpoint], estimate: float, now: datetime
    ) -> bool:
        """Reserve the check's estimate out of what the day's remaining rounds leave. The rounds'
        estimate is this model's round at its listed prices for every watched model, or today's
        mean spend per slot if more."""
        interval = self.settings.interval_minutes
        slots_so_far = max(1, int((now - day_start(now)) / timedelta(minutes=interval)))
        per_model = estimate_round_cost(
            endpoints, ROUND_PROBES, ESTIMATE_PROMPT_TOKENS, self.settings.openrouter.max_tokens
        )
        round_usd = max(
            per_model * len(self.settings.models), budget.spent_before_usd / slots_so_far
        )
        rounds_left = rounds_left_today(now, interval)
        return budget.reserve_within(
            estimate,
            lambda reserved: equality_allowance(budget.limit_usd, reserved, rounds_left, round_usd),
        )

    async def _sample(self, endpoint: Endpoint, pooled: bool) -> tuple[Sampled, float]:
        """The endpoint's story completions (temperature 1) and known answers (temperature 0)."""
        p = self.prompts
        out = capped_max_tokens(p.max_tokens, endpoint.max_completion_tokens)
        asks = [(s.id, p.story(s), 1.0) for s in p.prompts for _ in range(p.samples)]
        asks += [(k.id, k.prompt, 0.0) for k in p.known]
        self.dispatcher.expect(provider_of(endpoint.tag), DEFAULT_REQUEST_S * len(asks))
        answers = await asyncio.gather(
            *(
                self._ask(endpoint, p.body(text, temperature=t, max_tokens=out))
                for _, text, t in asks
            )
        )
        stories: dict[str, list[str]] = {}
        known: dict[str, str] = {}
        cost = 0.0
        for (item, _, temperature), (content, usd) in zip(asks, answers, strict=True):
            cost += usd
            if content is None:
                continue
            if temperature > 0:
                stories.setdefault(item, []).append(content)
            else:
                known[item] = content
        return p.sampled(endpoint.tag, stories, known, pooled=pooled), cost

    async def _ask(
        self, endpoint: Endpoint, body: dict[str, JsonValue]
    ) -> tuple[str | None, float]:
        """One pinned request: its content when it completed, and its cost. An equality sample
        is no contract's probe: the client's ``sample`` names none."""
        seen = await self.dispatcher.run(
            provider_of(endpoint.tag),
            lambda: self.client.sample(endpoint, body),
            seconds=DEFAULT_REQUEST_S,
        )
        return seen.content, probe_cost(seen.usage, endpoint.pricing)

    def _finish(
        self,
        check: int,
        report: EqualityReport,
        detail: dict[str, JsonValue],
        pooled: Collection[str] = (),
    ) -> None:
        audit = AuditRows(report.events, ACTOR, None) if report.events else None
        results = [(r, r.tag in pooled) for r in report.results]
        done = self.w.store.finish_equality(
            check, self.holder, results, at=self.clock(), status=report.status,
            cost_usd=report.cost_usd, detail=detail, audit=audit,
        )  # fmt: skip
        if not done:
            report.status, report.detail = "lost", "another runner took the check over"
            log.warning("equality_lost", model=report.model, check_id=check)


async def run_due(
    wiring: Wiring,
    holder: str,
    stopping: Callable[[], bool],
    *,
    prompts: EqualityPrompts | None = None,
) -> None:
    """The checks of the current slot that no runner claimed yet, one model at a time."""
    settings = wiring.settings
    now = datetime.now(UTC)
    slot = slot_of(now, settings.equality.interval_hours * 60)
    claimed = await asyncio.to_thread(wiring.store.equality_claimed, slot)
    due = [m for m in settings.models if m.id not in claimed]
    if not due:
        return
    async with openrouter_client(settings) as client:
        runner = EqualityRunner(wiring, client, prompts=prompts, holder=holder)
        for model in due:
            if stopping():
                return
            await runner.run_model(model, slot, datetime.now(UTC))


def _outlier(model: str, check: int, r: EndpointEquality) -> EqualityOutlier:
    why = f"answers differ from {r.peers} peers' ({r.reason}): MMD p={r.p_value:.4g}" + (
        f", known answers p={r.known_p_value:.4g}" if r.known_p_value is not None else ""
    )
    return EqualityOutlier(
        model=model, tag=r.tag, check_id=check, p_value=r.p_value,
        known_p_value=r.known_p_value, effect=r.effect, peers=r.peers, why=why,
    )  # fmt: skip
