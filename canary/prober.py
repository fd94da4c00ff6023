"""Send a round's pinned probes to the endpoints of one model and judge the answers.

I/O shell around the pure contracts: it owns the HTTP client, the concurrency limits and the
language re-checks; every judgement is delegated to canary.core.contracts.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from canary.core.contracts.hygiene import judge_hygiene
from canary.core.contracts.language import Analyze, judge_language, needs_recheck
from canary.core.contracts.refusal import judge_refusal
from canary.core.contracts.schema import judge_schema
from canary.core.contracts.tools import judge_tools
from canary.core.contracts.ttft import judge_ttft
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Observation,
    Result,
)
from canary.core.plan import PlannedProbe, plan_endpoint
from canary.openrouter.client import OpenRouterClient
from canary.probes import ProbeSet

TEXT_CONTRACTS = (Contract.ttft, Contract.refusal, Contract.language)


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
    ) -> None:
        self._client = client
        self._probes = probes
        self._analyze = analyze
        self._languages = tuple(languages)
        self._ttft_threshold_s = ttft_threshold_s
        self._ttft_samples = ttft_samples
        self._max_tokens = max_tokens
        self._global = asyncio.Semaphore(concurrency)
        self._per_provider_limit = per_provider_concurrency
        self._per_provider: dict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(self._per_provider_limit)
        )

    def applicable(self, contract: Contract, endpoint: Endpoint) -> bool:
        return self._probes.applicable(contract, endpoint)

    def plan(
        self, endpoint: Endpoint, state: EndpointState | None, index: int
    ) -> tuple[PlannedProbe, ...]:
        return plan_endpoint(
            endpoint,
            state,
            index=index,
            languages=self._languages,
            ttft_samples=self._ttft_samples,
            applicable=self.applicable,
        )

    async def probe_endpoints(
        self,
        endpoints: Sequence[Endpoint],
        states: Mapping[str, EndpointState],
        index: int,
    ) -> list[EndpointProbing]:
        tasks = [self.probe_endpoint(e, states.get(e.tag), index) for e in endpoints]
        return list(await asyncio.gather(*tasks))

    async def probe_endpoint(
        self, endpoint: Endpoint, state: EndpointState | None, index: int
    ) -> EndpointProbing:
        plan = self.plan(endpoint, state, index)
        language = plan[0].language
        observations = list(await asyncio.gather(*(self._send(endpoint, p) for p in plan)))
        first_language = next(o for o in observations if o.contract is Contract.language)
        if needs_recheck(first_language, language, self._analyze):
            rechecks = [
                PlannedProbe(endpoint.model, endpoint.tag, Contract.language, language, attempt)
                for attempt in (2, 3)
            ]
            observations += await asyncio.gather(*(self._send(endpoint, p) for p in rechecks))
        results = self.judge(endpoint, language, observations)
        return EndpointProbing(endpoint, language, tuple(observations), results)

    def judge(
        self, endpoint: Endpoint, language: str, observations: Sequence[Observation]
    ) -> tuple[ContractResult, ...]:
        of = _by_contract(observations)
        probes = self._probes
        text = [o for c in TEXT_CONTRACTS for o in of[c]]
        results = [
            judge_ttft(of[Contract.ttft], self._ttft_threshold_s),
            judge_refusal(
                of[Contract.refusal],
                probes.refusal_patterns,
                max_tokens=min(
                    self._max_tokens, endpoint.max_completion_tokens or self._max_tokens
                ),
            ),
            judge_schema(
                of[Contract.schema], probes.schema, self.applicable(Contract.schema, endpoint)
            ),
            judge_language(of[Contract.language], language, self._analyze),
            judge_hygiene(text),
            judge_tools(
                of[Contract.tools],
                probes.tool,
                self.applicable(Contract.tools, endpoint),
                endpoint.supports("tool_choice"),
            ),
        ]
        seen = {**of, Contract.hygiene: text}  # hygiene judges the text probes' answers
        return tuple(_mark_invalid_probes(r, seen[r.contract]) for r in results)

    async def _send(self, endpoint: Endpoint, planned: PlannedProbe) -> Observation:
        nonce = secrets.token_hex(6)
        request = self._probes.request(
            planned.contract, planned.language, nonce, endpoint, self._max_tokens
        )
        provider_key = endpoint.tag.split("/", 1)[0]
        # the provider's slot first: a probe queued behind a busy provider holds no global slot
        async with self._per_provider[provider_key], self._global:
            observation = await self._client.probe(
                endpoint,
                request.body,
                contract=planned.contract,
                language=planned.language,
                attempt=planned.attempt,
                checksum=request.checksum,
                nonce=nonce,
            )
        return observation  # the client logs an attribution mismatch loudly


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
