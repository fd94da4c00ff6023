"""Focused checks: an app's report makes canary look again at once, through the round's own
probing, judging and decision code.

Every tick (the daemon's, every few seconds) takes the pending reports (a generation id with no
provider is first resolved through OpenRouter's generation endpoint, then held to the
per-endpoint limit and the maintenance test as a report naming its provider is), adds the
contracts due a second focused look (:func:`canary.core.reports.second_looks`), and claims each
(model, contract) in the store: one focused check per (model, contract) per
``min_look_gap_minutes``, whatever the number of replicas. A check ends by settling, in one
transaction, every pending report it answers (:func:`canary.core.reports.joins`): those it was
claimed for and those that came, to any replica, while it ran. A report whose contract was
claimed lately and whose check has ended waits for the next claim. A check is a round of its
own, marked extra (it never moves the success timestamp, the served-model baseline or the
heartbeat) and of kind ``focused``: the reported endpoints first, then every usable one (the
model-wide rule judges as in a round) and the positive controls when refusal is checked, pinned,
with the 2-of-3 re-check. Its confirmed failures are one failing look each
(:func:`canary.core.reports.failures_only`); its passes change nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from pydantic import JsonValue

from canary.config.settings import ModelSettings
from canary.core.events import ModelWide, ReportConfirmed
from canary.core.model import Contract, Endpoint, Look, LookKind, Verdict
from canary.core.reports import (
    Outcome,
    failures_only,
    focus_order,
    joins,
    report_outcome,
    second_looks,
)
from canary.openrouter.client import OpenRouterClient
from canary.rounds.budget import DayBudget
from canary.rounds.outcome import ModelRound
from canary.rounds.prober import EndpointProbing
from canary.rounds.runner import Ready, RoundRunner
from canary.rounds.wiring import Wiring
from canary.service.logs import get_logger
from canary.service.reports import NOT_LISTED, admit, tags_named
from canary.store._reports import ReportRow

log = get_logger("canary.rounds.focused")
PENDING_FOR = timedelta(hours=6)  # a report still pending after this is left alone
UNRESOLVED = "the generation endpoint did not name its provider within 30 s (not this account's?)"


@dataclass(frozen=True)
class Focus:
    """What one focused check looks at, and for whom."""

    contracts: frozenset[Contract]
    reported: tuple[str, ...]  # the endpoints the reports (or a pending second look) name
    reports: tuple[ReportRow, ...] = ()
    language: str | None = None  # a language report's language: the one probed


class FocusedRunner(RoundRunner):
    """One focused check of one model: a round of kind ``focused`` on the focus."""

    def __init__(
        self,
        wiring: Wiring,
        client: OpenRouterClient,
        focus: Focus,
        *,
        clock: Callable[[], datetime],
        holder: str | None = None,
    ) -> None:
        super().__init__(wiring, client, clock=clock, holder=holder)
        self.extra = True
        self.focus = focus
        self.prober.focus = focus.contracts
        self.looked_at: frozenset[str] = frozenset(focus.reported)  # set when it is prepared

    def look(self, round_id: int, now: datetime) -> Look:
        return Look(LookKind.focused, round_id, now)

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
        ready = super()._prepare(model, round_id, slot, now, report, endpoints, budget)
        focus = self.focus
        also = set(ready.published.usable or ())
        if Contract.refusal in focus.contracts:
            also |= set(model.positive_controls)
        wanted = focus_order(focus.reported, also)
        by_tag = {e.tag: e for e in ready.chosen}
        states = dict(ready.states)
        if focus.language is not None:
            for tag in focus.reported:
                if tag in states:
                    states[tag] = replace(states[tag], next_language=focus.language,
                                          next_language_since=now)  # fmt: skip
        self.looked_at = frozenset(wanted)
        skipped = [(t, why) for t, why in ready.skipped if t in wanted]
        report.skipped = skipped
        chosen = [by_tag[t] for t in wanted if t in by_tag]
        return replace(ready, chosen=chosen, skipped=skipped, states=states)

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
        outcome, verdicts, _ = self._judge(
            model, round_id, now, report, endpoints, ready, probings, budget
        )
        contracts = {c.value for c in self.focus.contracts}
        counted = {
            t: failures_only(v, contracts)
            for t, v in verdicts.items()
            if v.verdict is not Verdict.skipped
        }
        wide = sorted(
            {e.contract.value for e in outcome.events if isinstance(e, ModelWide)} & contracts
        )
        look = self.look(round_id, now)
        reports = self._joined(model.id, contracts, now)
        confirmed = [
            ReportConfirmed(
                model=model.id,
                tag=tag,
                evidence=(look,),
                contracts=tuple(sorted(r.contract.value for r in counted[tag].results)),
                reports=tuple(r.id for r in reports if tag in r.tags),
            )  # fmt: skip
            for tag in sorted({t for r in reports for t in r.tags} | set(self.focus.reported))
            if tag in counted and counted[tag].results
        ]
        report.events += confirmed
        self._decide(model, round_id, now, report, endpoints, counted, (), confirmed, look)
        failed: dict[str, JsonValue] = {
            c: list[JsonValue](
                t for t, v in sorted(counted.items()) if any(r.contract == c for r in v.results)
            )
            for c in sorted(contracts)
        }
        ids: list[JsonValue] = [r.id for r in reports]
        detail: dict[str, JsonValue] = {
            "focused": {"contracts": list[JsonValue](sorted(contracts)), "reports": ids,
                        "failed": failed, "model_wide": list[JsonValue](wide)},
        }  # fmt: skip
        self.w.store.finish_round(
            round_id, "finished", cost_usd=report.cost_usd,
            skipped=[{"provider": t, "reason": r} for t, r in ready.skipped],
            detail=detail, at=self.clock(), holder=self.holder,
        )  # fmt: skip
        unpaid = [t for t, _ in ready.skipped]

        def answer(r: ReportRow) -> str | None:
            if not joins(r.tags, r.contracts, contracts, self.looked_at):
                return None
            return report_outcome(r.tags, r.contracts, counted, wide, unpaid).value

        # The reports behind the check and those that came while it ran, settled at once.
        settled = self.w.store.settle_pending(
            model.id, now - PENDING_FOR, answer, check=round_id, at=now
        )
        for answered in settled.values():
            self.w.metrics.observe_report(answered)

    def _joined(self, model: str, contracts: set[str], now: datetime) -> list[ReportRow]:
        """The reports this check answers: those it was claimed for, and those that came since
        (on endpoints it looked at, for a contract it probed)."""
        pending = self.w.store.reports(
            model=model,
            outcomes=[Outcome.pending.value],
            received_since=now - PENDING_FOR,
            limit=1000,
        )
        came = [r for r in pending if joins(r.tags, r.contracts, contracts, self.looked_at)]
        return list({r.id: r for r in [*self.focus.reports, *came]}.values())


class FocusedChecks:
    """The daemon's focused checks: pending reports (and second looks) in, checks run."""

    def __init__(
        self,
        wiring: Wiring,
        client: OpenRouterClient,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holder: str | None = None,
    ) -> None:
        self.w = wiring
        self.client = client
        self.clock = clock
        self.holder = holder

    async def tick(self) -> list[ModelRound]:
        """Resolve, claim and run what is due now; the checks' reports."""
        store, now = self.w.store, self.clock()
        pending = await asyncio.to_thread(
            store.reports,
            outcomes=[Outcome.pending.value],
            received_since=now - PENDING_FOR,
            limit=1000,
        )
        unresolved = [r for r in pending if not r.tags and r.generation_id]
        if unresolved:
            await self._resolve(unresolved)
            pending = await asyncio.to_thread(
                store.reports, outcomes=[Outcome.pending.value], received_since=now - PENDING_FOR,
                limit=1000,
            )  # fmt: skip
        focuses = await asyncio.to_thread(self._claim, [r for r in pending if r.tags], now)
        if not focuses:
            return []
        await asyncio.to_thread(self.w.analyzer.warm)
        limit = self.w.settings.daily_budget_usd
        budget = None if limit is None else DayBudget.of(store, limit, now)
        runs = [
            FocusedRunner(
                self.w, self.client, focus, clock=self.clock, holder=self.holder
            ).run_model(self.w.settings.model(model), now, now, budget)
            for model, focus in focuses
        ]
        done = list(await asyncio.gather(*runs))
        for check in done:
            log.info("focused_check_done", model=check.model, round_id=check.round_id,
                     status=check.status, decided=check.decided)  # fmt: skip
        return done

    def _claim(self, pending: Sequence[ReportRow], now: datetime) -> list[tuple[str, Focus]]:
        """Per model: the contracts due (reported, or a second look) that this replica claimed."""
        store, gap = self.w.store, self.w.rules.min_look_gap
        due: dict[str, dict[Contract, set[str]]] = {}
        for r in pending:
            for c in r.contracts:
                due.setdefault(r.model, {}).setdefault(Contract(c), set()).update(r.tags)
        states = store.load_states_of(list(self.w.settings.model_ids))  # one read for all
        for model, of_model in states.items():
            for c, tags in second_looks(of_model.values(), now, gap).items():
                due.setdefault(model, {}).setdefault(c, set()).update(tags)
        focuses = []
        for model, by_contract in sorted(due.items()):
            claimed = frozenset(
                c for c in sorted(by_contract) if store.claim_focused(model, c.value, now, gap)
            )
            if not claimed:
                continue
            names = {c.value for c in claimed}
            reports = tuple(r for r in pending if r.model == model and names & set(r.contracts))
            reported = sorted(set().union(*(by_contract[c] for c in claimed)))
            language = next((r.language for r in reports if r.language), None)
            focuses.append((model, Focus(claimed, tuple(reported), reports, language)))
        return focuses

    async def _resolve(self, reports: Sequence[ReportRow]) -> None:
        """Name the provider of reports that gave only a generation id, through OpenRouter's
        generation endpoint (readable by the account that made the request); never a guess."""
        names = await asyncio.gather(
            *(self.client.generation_provider(str(r.generation_id)) for r in reports)
        )
        for r, name in zip(reports, names, strict=True):
            await asyncio.to_thread(self._attribute, r, name)

    def _attribute(self, report: ReportRow, name: str | None) -> None:
        store = self.w.store
        if name is None:
            store.attribute_report(report.id, None, (), Outcome.unattributed.value, UNRESOLVED)
            self.w.metrics.observe_report(Outcome.unattributed.value)
            return
        tags = tags_named(store, report.model, name)
        if not tags:
            why = NOT_LISTED.format(name)
            store.attribute_report(report.id, name, (), Outcome.unattributed.value, why)
            self.w.metrics.observe_report(Outcome.unattributed.value)
            return
        # As a report naming its provider: the per-endpoint limit (its 429 is the outcome
        # rate_limited, the app was answered already) and the maintenance test.
        admitted = admit(store, self.w.settings, report.model, tags, self.clock(),
                         report_id=report.id)  # fmt: skip
        store.attribute_report(report.id, name, tags, admitted.outcome.value, admitted.reason)
        self.w.metrics.observe_report(admitted.outcome.value)
