"""Send a round's pinned probes to the endpoints of one model and judge the answers.

I/O shell around the pure contracts: it owns the HTTP client and the concurrency limits, and
sends what the core asks for (the planned probes, then two re-checks of each probe whose contract
failed its first look); every judgement is delegated to canary.core.contracts.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from canary.config.probe_set import ProbeSet, capped_max_tokens
from canary.core.contracts.confirm import RECHECKS
from canary.core.contracts.endpoint import Judging, first_look, judge_endpoint
from canary.core.contracts.evidence import PROSE
from canary.core.contracts.language import Analyze
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Observation,
    Result,
)
from canary.core.plan import PlannedProbe, focus_plan, plan_endpoint
from canary.openrouter.client import OpenRouterClient
from canary.rounds.dispatch import Dispatcher, provider_of

DEFAULT_REQUEST_S = 3.0  # one request's estimate when nothing is known of its endpoint
TYPICAL_ANSWER_TOKENS = 150  # for an estimate from the listing's throughput


@dataclass(frozen=True)
class EndpointProbing:
    """Everything one endpoint produced in one pass: raw observations and judged contracts."""

    endpoint: Endpoint
    language: str
    observations: tuple[Observation, ...]
    results: tuple[ContractResult, ...]


class Prober:
    def __init__(
        self,
        client: OpenRouterClient,
        probes: ProbeSet,
        analyze: Analyze,
        *,
        languages: Sequence[str],
        ttft_threshold_s: float,
        ttft_samples: int,
        max_tokens: int,
        concurrency: int,
        per_provider_concurrency: int,
        positive_controls: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        """``positive_controls``: each model's control tags (model id -> tags); their answers
        are never language or hygiene evidence."""
        self._client = client
        self._probes = probes
        self._analyze = analyze
        self._languages = tuple(languages)
        self._ttft_threshold_s = ttft_threshold_s
        self._ttft_samples = ttft_samples
        self._max_tokens = max_tokens
        self._controls = {m: frozenset(t) for m, t in (positive_controls or {}).items()}
        self.dispatcher = Dispatcher(concurrency, per_provider_concurrency)
        # seconds one request to an endpoint takes, from its last round (else the default)
        self.estimates: dict[tuple[str, str], float] = {}
        self.focus: frozenset[Contract] = frozenset()  # a focused check's contracts (else all)

    def applicable(self, contract: Contract, endpoint: Endpoint) -> bool:
        return self._probes.applicable(contract, endpoint)

    def plan(
        self,
        endpoint: Endpoint,
        state: EndpointState | None,
        index: int,
        *,
        now: datetime | None = None,
        max_age: timedelta | None = None,
    ) -> tuple[PlannedProbe, ...]:
        plan = plan_endpoint(
            endpoint,
            state,
            index=index,
            languages=self._languages,
            ttft_samples=self._ttft_samples,
            applicable=self.applicable,
            now=now,
            max_age=max_age,
        )
        return focus_plan(plan, self.focus) if self.focus else plan

    async def probe_endpoints(
        self,
        endpoints: Sequence[Endpoint],
        states: Mapping[str, EndpointState],
        index: int,
        *,
        now: datetime | None = None,
        max_age: timedelta | None = None,
    ) -> list[EndpointProbing]:
        """``now`` and ``max_age``: a pending language older than that is not repeated."""
        planned = [
            (e, self.plan(e, states.get(e.tag), index, now=now, max_age=max_age)) for e in endpoints
        ]
        planned = [(e, plan) for e, plan in planned if plan]  # a focus may leave one nothing
        endpoints, plans = [e for e, _ in planned], [plan for _, plan in planned]
        for endpoint, plan in planned:
            # the whole model's work counts toward its providers' priority from now
            self.dispatcher.expect(provider_of(endpoint.tag), self.estimate(endpoint) * len(plan))
        tasks = [self.probe_endpoint(e, plan) for e, plan in zip(endpoints, plans, strict=True)]
        return list(await asyncio.gather(*tasks))

    def estimate(self, endpoint: Endpoint) -> float:
        """Seconds one request to ``endpoint`` is expected to take: its requests' mean in its
        last round, else OpenRouter's latency and throughput figures, else a default."""
        known = self.estimates.get((endpoint.model, endpoint.tag))
        if known is not None:
            return known
        latency, throughput = endpoint.latency_last_30m, endpoint.throughput_last_30m
        if latency and throughput and latency.get("p50") and throughput.get("p50"):
            return latency["p50"] / 1000 + TYPICAL_ANSWER_TOKENS / throughput["p50"]
        return DEFAULT_REQUEST_S

    async def probe_endpoint(
        self, endpoint: Endpoint, plan: Sequence[PlannedProbe]
    ) -> EndpointProbing:
        """Send ``plan`` (registered with the dispatcher by :meth:`probe_endpoints`), then the
        re-checks of each contract that failed its first look, and judge the answers."""
        language = plan[0].language
        judging = self.judging(endpoint, language)
        first = list(await asyncio.gather(*(self._send(endpoint, p) for p in plan)))
        # judging (the language detector above all) runs off the event loop: the loop keeps
        # reading and timing the other streams meanwhile
        looked = await asyncio.to_thread(first_look, judging, first)
        rechecks = [
            PlannedProbe(endpoint.model, endpoint.tag, contract, language, attempt)
            for contract in looked.recheck_probes()
            for attempt in _next_attempts(plan, contract)
        ]
        self.dispatcher.expect(provider_of(endpoint.tag), self.estimate(endpoint) * len(rechecks))
        second = list(
            await asyncio.gather(*(self._send(endpoint, p, urgent=True) for p in rechecks))
        )
        if second:  # re-check answers to analyse: off the loop too
            results = await asyncio.to_thread(judge_endpoint, judging, looked, second)
        else:  # the first look's results as they are: not worth a thread's round trip
            results = judge_endpoint(judging, looked, second)
        observations = first + second
        results = self._mark_invalid(results, observations)
        return EndpointProbing(endpoint, language, tuple(observations), results)

    def judging(self, endpoint: Endpoint, language: str) -> Judging:
        probes = self._probes
        return Judging(
            language=language,
            analyze=self._analyze,
            refusal_patterns=probes.refusal_patterns,
            schema=probes.schema,
            tool=probes.tool,
            ttft_threshold_s=self._ttft_threshold_s,
            max_tokens=capped_max_tokens(self._max_tokens, endpoint.max_completion_tokens),
            schema_applicable=self.applicable(Contract.schema, endpoint),
            tools_applicable=self.applicable(Contract.tools, endpoint),
            tools_forced=endpoint.supports("tool_choice"),
            controls=self._controls.get(endpoint.model, frozenset()),
        )

    @staticmethod
    def _mark_invalid(
        results: Sequence[ContractResult], observations: Sequence[Observation]
    ) -> tuple[ContractResult, ...]:
        of = _by_contract(observations)
        prose = [o for o in observations if o.contract in PROSE]
        seen = {**of, Contract.language: prose, Contract.hygiene: prose}
        return tuple(_mark_invalid_probes(r, seen[r.contract]) for r in results)

    async def _send(
        self, endpoint: Endpoint, planned: PlannedProbe, *, urgent: bool = False
    ) -> Observation:
        """One request in one of the round's slots (:class:`canary.rounds.dispatch.Dispatcher`);
        ``urgent``: a re-check, which the endpoint's judgement waits on."""
        nonce = secrets.token_hex(6)
        request = self._probes.request(
            planned.contract, planned.language, nonce, endpoint, self._max_tokens
        )
        return await self.dispatcher.run(  # the client logs an attribution mismatch loudly
            provider_of(endpoint.tag),
            lambda: self._client.probe(
                endpoint,
                request.body,
                contract=planned.contract,
                language=planned.language,
                attempt=planned.attempt,
                checksum=request.checksum,
                nonce=nonce,
            ),
            seconds=self.estimate(endpoint),
            urgent=urgent,
        )


def _next_attempts(plan: Sequence[PlannedProbe], contract: Contract) -> range:
    """The attempt numbers of a probe's re-checks: after its planned attempts."""
    planned = max((p.attempt for p in plan if p.contract is contract), default=0)
    return range(planned + 1, planned + 1 + RECHECKS)


def _by_contract(observations: Sequence[Observation]) -> dict[Contract, list[Observation]]:
    grouped: dict[Contract, list[Observation]] = {c: [] for c in Contract}
    for o in observations:
        grouped[o.contract].append(o)
    return grouped


def _mark_invalid_probes(
    result: ContractResult, observations: Sequence[Observation]
) -> ContractResult:
    """A probe answered by another provider than the pinned one is invalid: never pass or fail."""
    mismatched = [o for o in observations if o.transport == "ok" and not o.attribution_ok]
    if not mismatched or any(o.completed for o in observations):
        return result
    if result.result in (Result.not_applicable,):
        return result
    served = sorted({o.served_by or "?" for o in mismatched})
    return replace(
        result,
        result=Result.inconclusive,
        reason="attribution_mismatch",
        detail=f"invalid probe: answered by {', '.join(served)} instead of the pinned endpoint",
    )
