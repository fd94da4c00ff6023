"""One round: list → plan → probe → judge → decide → persist → publish.

Every rule lives in canary.core; this module only moves data between the wire, the rules and
the store. A round is claimed per (model, slot) in the store, so replicas never run it twice;
every write of a round checks that this runner still holds it, and a model's decisions, audit
rows and the round's end (``finished``) are written in one transaction, so a decided round is
never abandoned and a lost one leaves nothing that counts.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import socket
import time
from asyncio import FIRST_COMPLETED
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from canary.config.settings import ModelSettings, Settings
from canary.core.alerts import listing_alert, once_a_day, operator_alert
from canary.core.events import ControlMissing, Event
from canary.core.floor import Publication
from canary.core.identity import Listed, named_tags
from canary.core.model import (
    DAY,
    Endpoint,
    EndpointState,
    Exclusion,
    Layer,
    Look,
    Observation,
    RoundVerdict,
    Verdict,
    iso_utc,
)
from canary.core.plan import round_index, slot_of
from canary.core.probing import listing_stopped, round_stopped
from canary.core.served import served_model
from canary.core.verdict import RoundOutcome, judge_round
from canary.openrouter.client import ListingError, OpenRouterClient
from canary.rounds.budget import DayBudget, affordable
from canary.rounds.deciding import ACTOR
from canary.rounds.dispatch import claim_order
from canary.rounds.drift_records import record_identity, record_listing
from canary.rounds.outcome import ModelRound
from canary.rounds.prober import EndpointProbing, Prober
from canary.rounds.wiring import Wiring
from canary.service.logs import get_logger
from canary.store import AuditRows
from canary.store._claims import RoundLost
from canary.store.engine import STORE_ERRORS
from canary.store.rows import RoundRow, SkippedEndpoint
from canary.tracing import TRACING_ERRORS, RoundTracer

log = get_logger("canary.rounds.runner")
# On a shared store a replica claims another model only while fewer requests than this many
# times its concurrency wait: enough to keep every slot busy, and the rest left to the others.
QUEUE_ROOM = 2
WATCH_EVERY_S = 1.0  # how often a replica looks at the rounds other replicas run in its slot
CLAIM_LOOK_S = 0.1  # how often a replica with models left to claim looks at its queue
# Heartbeats have threads of their own: a default executor saturated by judging and store work
# must never delay a beat past the lease TTL (a beat is one short UPDATE).
HEARTBEAT_THREADS = 2


@dataclass(frozen=True)
class Ready:
    """What a model's round knows once it is prepared to probe."""

    published: Publication
    states: dict[str, EndpointState]
    index: int
    chosen: list[Endpoint]
    skipped: list[tuple[str, str]]
    reserved: float  # of the day's budget
    windows: list[Exclusion]  # the maintenance windows in force


def _last_beat(row: RoundRow) -> datetime:
    return row.heartbeat_at or row.started_at


def runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@functools.cache
def heartbeat_threads() -> ThreadPoolExecutor:
    """The process's heartbeat threads, apart from the default executor (started on the first
    beat; idle between rounds)."""
    return ThreadPoolExecutor(HEARTBEAT_THREADS, thread_name_prefix="canary-heartbeat")


class RoundRunner:
    def __init__(
        self,
        wiring: Wiring,
        client: OpenRouterClient,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holder: str | None = None,
        decides: bool = True,
        tracer: RoundTracer | None = None,
    ) -> None:
        """``decides=False``: an extra round (``canary round --now``), recorded and shown but
        deciding nothing: no state, quarantine, release, drift or audit row comes of it, so the
        consecutive-round rule keeps its spacing."""
        self.w = wiring
        self.decides = decides
        self.extra = not decides  # marked extra: kept out of the success timestamp and baselines
        self.tracer = tracer if tracer is not None else wiring.tracer
        self.settings: Settings = wiring.settings
        self.client = client
        self.clock = clock
        self.holder = holder or runner_id()
        self._unlisted: dict[str, int] = {}  # claimed models not probing yet: their requests
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
            positive_controls={m.id: m.positive_controls for m in self.settings.models},
        )

    async def run(self, scheduled_at: datetime | None = None) -> list[ModelRound]:
        """Run one round for every watched model. `scheduled_at` defaults to the current slot.

        Each model's round is claimed on its own. On PostgreSQL, replicas share the slot: a
        replica claims the next model (the busiest providers' first) only while its queue holds
        less than :data:`QUEUE_ROOM` times its concurrency, so the others claim the rest; on
        SQLite one runner claims them all at once. A model whose round fails is reported
        ``abandoned`` (with ``error``) and the other models still run.
        """
        now = self.clock()
        slot = scheduled_at or slot_of(now, self.settings.interval_minutes)
        stale_before = now - timedelta(minutes=self.settings.interval_minutes * 3)
        self.w.store.abandon_stale_rounds(stale_before, now=now)
        limit = self.settings.daily_budget_usd
        budget = None if limit is None else DayBudget.of(self.w.store, limit, now)
        models = list(self.settings.models)
        snapshots = self.w.store.latest_snapshots([m.id for m in models])
        order, sizes = claim_order(models, {m: set(s or {}) for m, s in snapshots.items()})
        self.prober.estimates = self.w.store.request_seconds(list(sizes))
        # Load the language models off the event loop before any probe is in flight: loading
        # them mid-round would stall the loop and inflate every concurrent ttft measurement.
        await asyncio.to_thread(self.w.analyzer.warm)
        # The same for the metrics module (prometheus_client): imported by the first model's
        # decision, it would hold the import lock and the GIL mid-round.
        self.w.metrics  # noqa: B018  # a cached import
        # What start-up made lives as long as the process: out of the collector's sight, the
        # full collections a round's many short-lived chunks trigger do not walk it.
        gc.freeze()
        log.info(
            "round_started",
            holder=self.holder,
            slot=iso_utc(slot),
            models=len(self.settings.models),
            extra=not self.decides,
        )
        return await self._run_models(order, sizes, slot, now, budget)

    async def _run_models(
        self,
        order: Sequence[ModelSettings],
        sizes: Mapping[str, int],
        slot: datetime,
        now: datetime,
        budget: DayBudget | None,
    ) -> list[ModelRound]:
        share = self.w.store.is_postgres
        room = QUEUE_ROOM * self.settings.concurrency
        per_endpoint = self.settings.ttft_samples + 4  # the probes of an endpoint, about
        pending = deque(order)
        running: set[asyncio.Task[ModelRound]] = set()
        reports: list[ModelRound] = []
        while pending or running:
            while pending and (not share or self._queued() < room):
                model = pending.popleft()
                self._unlisted[model.id] = sizes.get(model.id, 10) * per_endpoint
                running.add(asyncio.create_task(self.run_model(model, slot, now, budget)))
            # wake up when a model ends, or soon after requests leave the queue for slots
            try:
                done, running = await asyncio.wait(
                    running, timeout=CLAIM_LOOK_S if pending else None, return_when=FIRST_COMPLETED
                )
            except asyncio.CancelledError:  # a stop: the models' work ends with the round's,
                for task in running:  # before the HTTP client it uses is closed
                    task.cancel()
                if running:
                    await asyncio.wait(running)
                raise
            for task in done:
                report = task.result()  # only the store failing before a claim raises
                self._unlisted.pop(report.model, None)
                reports.append(report)
        by_model = {r.model: r for r in reports}
        if share:
            await self._reclaim_lost(order, by_model, slot, now, budget)
        return [by_model[m.id] for m in order if m.id in by_model]

    async def _reclaim_lost(
        self,
        order: Sequence[ModelSettings],
        by_model: dict[str, ModelRound],
        slot: datetime,
        now: datetime,
        budget: DayBudget | None,
    ) -> None:
        """Watch the models other replicas claimed until their rounds end. One whose claimer
        stopped beating for the lease TTL is claimed again (its attempt marked abandoned) and
        run here, so a replica that dies mid-round costs the slot one TTL, not its models; one
        whose claimer gave it up (shut down, or failed) is run here at once. A replica runs a
        model at most once per slot, so a round that fails everywhere is tried once by each."""
        every = min(WATCH_EVERY_S, self.settings.lease_ttl_s / 3)  # one small read per look
        watching = [m for m in order if by_model[m.id].status == "claimed_elsewhere"]
        while watching:
            live = self.w.store.live_rounds([m.id for m in watching], slot)
            lost_before = self.clock() - timedelta(seconds=self.settings.lease_ttl_s)
            given_up = [m for m in watching if m.id not in live]
            running = [m for m in watching if (r := live.get(m.id)) and r.status == "running"]
            lost = [m for m in running if _last_beat(live[m.id]) < lost_before]
            retry = given_up + lost
            retried = await asyncio.gather(*(self.run_model(m, slot, now, budget) for m in retry))
            for report in retried:
                by_model[report.model] = report
            again = {r.model for r in retried if r.status == "claimed_elsewhere"}
            watching = [m for m in running if m not in lost] + [m for m in retry if m.id in again]
            if watching:
                await asyncio.sleep(every)

    def _queued(self) -> int:
        """Requests waiting for a slot, and those of claimed models not probing yet."""
        return self.prober.dispatcher.queued + sum(self._unlisted.values())

    async def run_model(
        self,
        model: ModelSettings,
        slot: datetime,
        now: datetime,
        budget: DayBudget | None = None,
    ) -> ModelRound:
        """Claim and run one model's round. A failure inside the round never escapes: the report
        carries ``error``, and the round is recorded ``abandoned`` (nothing of its decision was
        written, so the next round starts from the states as they were) or, when the failure
        came after the decision's transaction committed, ``finished`` with the error noted. A
        round another replica reclaimed (its heartbeats stopped) ends here ``lost``. Every
        outcome but a cancellation (a stop) is traced when traces are on."""
        store = self.w.store
        started = time.perf_counter()
        round_id = store.claim_round(
            model.id,
            slot,
            self.holder,
            self.w.policy_version,
            dict(self.w.probes.checksums),
            started_at=self.clock(),
            lost_before=self.clock() - timedelta(seconds=self.settings.lease_ttl_s),
            extra=self.extra,
        )
        report = ModelRound(model.id, round_id, now, extra=self.extra)
        if round_id is None:
            report.status = "claimed_elsewhere"
            return report
        work = asyncio.create_task(self._run_claimed(model, round_id, slot, now, report, budget))
        beat = asyncio.create_task(self._heartbeat(round_id, work))
        ran = False
        try:
            await work
            ran = True
        except asyncio.CancelledError:
            if not beat.done() or beat.result() is not False:
                raise  # cancelled from outside (shutdown): not ours to handle
            report.status, report.error = "lost", "another replica reclaimed the round"
            report.error_type = "lost"
            log.warning("round_lost", model=model.id, round_id=round_id, holder=self.holder)
        except RoundLost as exc:
            report.status, report.error, report.error_type = "lost", str(exc), "lost"
            log.warning("round_lost", model=model.id, round_id=round_id, holder=self.holder)
        except Exception as exc:
            self._fail_round(model.id, round_id, report, exc)
        finally:
            beat.cancel()
            report.duration_s = time.perf_counter() - started
        if ran:
            self.w.metrics.observe_round(report.duration_s, report.cost_usd)
        await self._trace(report)
        return report

    async def _trace(self, report: ModelRound) -> None:
        """The round's trace, built in a worker thread: building the spans of a large round
        would otherwise stall the loop that times other models' streams.
        A tracing error is logged and never fails the round."""
        if self.tracer is None:
            return
        try:
            await asyncio.to_thread(
                self.tracer.round_done, report, policy_version=self.w.policy_version
            )
        except TRACING_ERRORS as exc:
            log.error("trace_failed", model=report.model, round_id=report.round_id, error=repr(exc))

    async def _heartbeat(self, round_id: int, work: asyncio.Task[None]) -> bool:
        """Beat while the round runs, on the heartbeat threads; cancel it (and answer False)
        when it was reclaimed. The work's thread, if one is busy, stops at its next write: every
        write of a round checks that its claimer still holds it."""
        every = min(self.settings.lease_renew_s, self.settings.lease_ttl_s / 3)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(every)
            try:
                kept = await loop.run_in_executor(
                    heartbeat_threads(),
                    self.w.store.heartbeat_round,
                    round_id,
                    self.holder,
                    self.clock(),
                )
            except STORE_ERRORS as exc:  # the store blinked: beat again next time
                log.warning("round_heartbeat_failed", round_id=round_id, error=repr(exc))
                continue
            if not kept:
                work.cancel()
                return False

    def _fail_round(self, model: str, round_id: int, report: ModelRound, exc: Exception) -> None:
        """Close a round that raised. Its decision is one transaction: either it was applied
        (the round stays ``finished``, with the error in its detail) or nothing of it was."""
        report.error = f"{type(exc).__name__}: {exc}"
        report.error_type = type(exc).__name__
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
        except STORE_ERRORS as again:  # the store is down: the round stays running, then stale
            log.error("round_close_failed", model=model, round_id=round_id, error=repr(again))

    async def _run_claimed(
        self,
        model: ModelSettings,
        round_id: int,
        slot: datetime,
        now: datetime,
        report: ModelRound,
        budget: DayBudget | None,
    ) -> None:
        """List, prepare, probe, conclude. The store's work and the judging of the round run in
        a worker thread, so the event loop keeps dispatching and timing the other models'
        streams meanwhile."""
        try:
            endpoints = await self.client.list_endpoints(model.id)
        except ListingError as exc:
            await asyncio.to_thread(self._listing_failed, model, round_id, now, report, exc)
            return
        ready = await asyncio.to_thread(
            self._prepare, model, round_id, slot, now, report, endpoints, budget
        )
        self._unlisted.pop(model.id, None)  # from here its requests are the dispatcher's
        probings = await self.prober.probe_endpoints(
            ready.chosen, ready.states, ready.index, now=now, max_age=self.w.rules.streak_max_age
        )
        await asyncio.to_thread(
            self._conclude, model, round_id, now, report, endpoints, ready, probings, budget
        )

    def _listing_failed(
        self,
        model: ModelSettings,
        round_id: int,
        now: datetime,
        report: ModelRound,
        exc: ListingError,
    ) -> None:
        alert = listing_alert(model.id, exc.transport, str(exc))
        report.stopped = listing_stopped(exc.transport, connected=exc.connected, error=str(exc))
        detail = {"listing": exc.transport.value}
        if report.stopped is not None:
            detail["probing"] = report.stopped.problem.value
        self.w.store.finish_round(
            round_id,
            "abandoned",
            detail=detail,
            at=self.clock(),
            holder=self.holder,
            audit=None if alert is None else self._audit_rows([alert]),
        )
        if alert is not None:
            report.events.append(alert)
        report.status, report.error = "abandoned", str(exc)
        report.error_type = f"listing_{exc.transport.value}"
        log.warning("listing_failed", model=model.id, transport=exc.transport.value)

    def _prepare(
        self,
        model: ModelSettings,
        round_id: int,
        slot: datetime,
        now: datetime,
        report: ModelRound,
        endpoints: Sequence[Endpoint],
        budget: DayBudget | None,
    ) -> Ready:
        """Before probing: drift, the list as published, the states, what the budget allows."""
        windows = self.w.store.active_exclusions(model.id, now, Layer.maintenance)
        if not self.extra:
            report.events += record_listing(
                self.w.store, self.holder, self._audit_rows, model, round_id, endpoints, now,
                windows,
            )  # fmt: skip
        published = self.w.decisions.publication(model.id, model.capacity_floor, now)
        states = self.w.store.load_states(model.id)
        index = round_index(slot, self.settings.interval_minutes)
        probes_of = lambda e: len(self.prober.plan(e, None, 0))  # noqa: E731
        chosen, skipped, reserved = affordable(
            model, endpoints, states, published, budget, index,
            probes_of=probes_of, max_tokens=self.settings.openrouter.max_tokens,
        )  # fmt: skip
        report.skipped = skipped
        return Ready(published, states, index, chosen, skipped, reserved, windows)

    def _conclude(
        self,
        model: ModelSettings,
        round_id: int,
        now: datetime,
        report: ModelRound,
        endpoints: Sequence[Endpoint],
        ready: Ready,
        probings: list[EndpointProbing],
        budget: DayBudget | None,
    ) -> None:
        """After probing: judge the round (:meth:`_judge`), decide, publish, end the round."""
        outcome, verdicts, observations = self._judge(
            model, round_id, now, report, endpoints, ready, probings, budget
        )
        store, holder, skipped = self.w.store, self.holder, ready.skipped
        listing = [Listed.of(e) for e in endpoints]
        ended: list[SkippedEndpoint] = [{"provider": t, "reason": r} for t, r in skipped]

        if not self.decides:
            report.events += list(outcome.events)
            store.finish_round(
                round_id,
                "finished",
                cost_usd=report.cost_usd,
                skipped=ended,
                detail={"extra": True},
                at=self.clock(),
                holder=holder,
            )
            return
        events = [self._gate_daily(e, now) for e in outcome.events]
        events += record_identity(
            self.w.store, self.holder, model.id, round_id, report.served_before, report.served, now,
            ready.windows, listing,
        )  # fmt: skip
        events += [e for e in (operator_alert(model.id, observations),) if e is not None]
        report.events += events
        if budget is not None:
            # Recorded apart from the decision: the alert is the budget day's, not this model's
            # round's, and its compare-and-set on the day's row must not make a decision retry.
            alert = budget.alert(
                model.id, skipped, now, actor=ACTOR, policy_version=self.w.policy_version,
                round_id=round_id,
            )  # fmt: skip
            report.events += [alert] if alert is not None else []
        judged = {t: v for t, v in verdicts.items() if v.verdict is not Verdict.skipped}
        self._decide(
            model, round_id, now, report, endpoints, judged, [t for t, _ in skipped], events
        )
        store.finish_round(
            round_id, "finished", cost_usd=report.cost_usd, skipped=ended, at=self.clock(),
            holder=holder,
        )  # fmt: skip

    def _decide(
        self, model: ModelSettings, round_id: int, now: datetime, report: ModelRound,
        endpoints: Sequence[Endpoint], verdicts: Mapping[str, RoundVerdict],
        skipped: Sequence[str], events: Sequence[Event], look: Look | None = None,
    ) -> None:  # fmt: skip
        """Decide on the judged verdicts and bring the floor's record up to date."""
        decisions = self.w.decisions
        decision = decisions.decide_round(
            model.id, round_id=round_id, listing=[Listed.of(e) for e in endpoints],
            verdicts=verdicts, skipped=skipped, round_events=events, floor=model.capacity_floor,
            now=now, holder=self.holder, look=look,
        )  # fmt: skip
        report.decided = True
        report.events += list(decision.events)
        report.events += decisions.sync_floor([model.id], {model.id: model.capacity_floor}, now)

    def look(self, round_id: int, now: datetime) -> Look:
        """What this round is as a look (a focused check's runner says ``focused``)."""
        return Look.round(round_id, now)

    def _judge(
        self,
        model: ModelSettings,
        round_id: int,
        now: datetime,
        report: ModelRound,
        endpoints: Sequence[Endpoint],
        ready: Ready,
        probings: list[EndpointProbing],
        budget: DayBudget | None,
    ) -> tuple[RoundOutcome, dict[str, RoundVerdict], list[Observation]]:
        """Record the answers, judge the round, record its verdicts."""
        store, holder, skipped = self.w.store, self.holder, ready.skipped
        report.probings = probings
        observations = [o for p in probings for o in p.observations]
        report.cost_usd = sum(
            self.w.cost_of(o, p.endpoint) for p in probings for o in p.observations
        )
        if budget is not None:
            budget.settle(ready.reserved, report.cost_usd)
        store.record_observations(round_id, model.id, observations, now, holder=holder)
        self.w.metrics.observe_transports(o.transport.value for o in observations)
        report.stopped = round_stopped(observations)
        if report.stopped is not None:
            # not a successful round: its row says why before the decision ends it, so the
            # success timestamp never counts it, on any replica
            store.note_round(round_id, {"probing": report.stopped.problem.value}, holder=holder)
            log.warning(
                "probes_stopped_at_openrouter",
                model=model.id,
                round_id=round_id,
                probing=report.stopped.problem.value,
                error=report.stopped.error,
            )

        listing = [Listed.of(e) for e in endpoints]
        outcome = judge_round(
            model.id,
            {p.endpoint.tag: p.results for p in probings},
            positive_controls=model.positive_controls,
            rules=self.w.rules,
            look=self.look(round_id, now),
            listed=[e.tag for e in endpoints],
            usable=ready.published.usable,
            maintenance=named_tags(ready.windows, listing, now),
        )
        verdicts = dict(outcome.verdicts)
        for tag, _reason in skipped:
            verdicts[tag] = RoundVerdict(model.id, tag, Verdict.skipped, ())
        served_before = store.served_models_before(model.id, round_id)
        served = {
            p.endpoint.tag: m
            for p in probings
            if (m := served_model(p.observations, served_before.get(p.endpoint.tag))) is not None
        }
        report.served = served
        store.record_verdicts(round_id, model.id, verdicts, served, holder=holder)
        for p in probings:
            for result in p.results:
                self.w.metrics.observe_probe(result.contract.value, result.result.value)
        report.verdicts = verdicts
        report.served_before = served_before
        return outcome, verdicts, observations

    def _gate_daily(self, event: Event, now: datetime) -> Event:
        """A missing control is audited every round and alerted at most once a day."""
        if not isinstance(event, ControlMissing):
            return event
        rows = self.w.store.audit(model=event.model, since=now - DAY, events=[event.kind])
        last = max(
            (r.at for r in rows if isinstance(r.decided, ControlMissing) and r.decided.alert),
            default=None,
        )
        return once_a_day(event, last, now)

    def _audit_rows(self, events: Sequence[Event]) -> AuditRows:
        return AuditRows(events, ACTOR, self.w.policy_version)


__all__ = ["RoundRunner"]
