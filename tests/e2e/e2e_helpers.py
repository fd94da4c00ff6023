"""Shared pieces of the end-to-end tests: a scenario builder and one real probe pass."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from shared_data import CORPUS as SHARED_CORPUS

from canary.config.probe_set import ProbeSet, load_probes
from canary.config.settings import PROJECT_ROOT
from canary.core.model import EndpointState
from canary.openrouter.client import OpenRouterClient
from canary.rounds.prober import EndpointProbing, Prober
from canary.text.detect import LanguageAnalyzer

CORPUS = SHARED_CORPUS.path
ALL_PARAMETERS = [
    "max_tokens", "temperature", "seed", "response_format", "structured_outputs",
    "tools", "tool_choice",
]  # fmt: skip
FAST: dict[str, Any] = {"ttft_ms": 5, "tokens_per_second": 4000}


def provider(tag: str, *faults: dict[str, Any], parameters: Sequence[str] = ALL_PARAMETERS,
             **extra: Any) -> dict[str, Any]:  # fmt: skip
    """A fast endpoint named after its tag, advertising ``parameters``, with ``faults``."""
    return {
        "tag": tag,
        "name": tag.replace("-", " ").title(),
        "supported_parameters": list(parameters),
        "faults": list(faults),
        **FAST,
        **extra,
    }


def probe_set(languages: Sequence[str]) -> ProbeSet:
    return load_probes(PROJECT_ROOT / "probes", languages)


def probe_pass(
    base_url: str,
    model: str,
    tags: Sequence[str] | None,
    *,
    probes: ProbeSet,
    analyzer: LanguageAnalyzer,
    language: str,
    ttft_threshold_s: float = 10.0,
    max_tokens: int = 200,
    **client_options: Any,
) -> dict[str, EndpointProbing]:
    """List the model's endpoints through the real client and probe ``tags`` (all when None),
    every one in ``language``, with the real Prober: tag -> what it saw and judged."""

    async def run() -> list[EndpointProbing]:
        async with OpenRouterClient(base_url, "sk-e2e", **client_options) as client:
            endpoints = await client.list_endpoints(model)
            chosen = [e for e in endpoints if tags is None or e.tag in tags]
            prober = Prober(
                client,
                probes,
                analyzer.analyze,
                languages=analyzer.languages,
                ttft_threshold_s=ttft_threshold_s,
                ttft_samples=3,
                max_tokens=max_tokens,
                concurrency=32,
                per_provider_concurrency=8,
            )
            states = {e.tag: EndpointState(model, e.tag, next_language=language) for e in chosen}
            return await prober.probe_endpoints(chosen, states, 0)

    return {p.endpoint.tag: p for p in asyncio.run(run())}
