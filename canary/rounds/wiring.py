"""Builds the pieces a round needs from the settings: store, probe set, analyzer, rules."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from canary.config.probe_set import ProbeSet, load_probes
from canary.config.settings import SUPPORTED_LANGUAGES, Settings
from canary.core.cost import probe_cost
from canary.core.model import Endpoint, Exclusion, Observation
from canary.core.policy import PolicyRules, policy_version
from canary.store.repository import Store

if TYPE_CHECKING:
    from canary.openrouter.client import OpenRouterClient
    from canary.rounds.deciding import ModelDecisions
    from canary.service.metrics import ProcessMetrics
    from canary.text.analysis import TextAnalysis
    from canary.text.detect import LanguageAnalyzer
    from canary.tracing import RoundTracer


@dataclass
class Wiring:
    settings: Settings
    store: Store
    probes: ProbeSet

    @cached_property
    def analyzer(self) -> LanguageAnalyzer:
        from canary.text.detect import LanguageAnalyzer

        # Probes rotate through the configured languages, but the detector must know every
        # supported one: a pt-only watcher still has to name the Spanish an answer drifted into.
        return LanguageAnalyzer(SUPPORTED_LANGUAGES)

    def analyze(self, text: str, expected: str) -> TextAnalysis:
        return self.analyzer.analyze(text, expected)

    @cached_property
    def rules(self) -> PolicyRules:
        return PolicyRules.of(
            self.settings.policy, self.settings.mode, self.settings.interval_minutes
        )

    @cached_property
    def policy_version(self) -> str:
        return policy_version(self.rules, decision_settings(self.settings, self.probes))

    @cached_property
    def tracer(self) -> RoundTracer | None:
        """The OpenTelemetry round tracer when traces are configured (None: off, the default)."""
        from canary.tracing import tracer_from_settings

        return tracer_from_settings(self.settings)

    @cached_property
    def decisions(self) -> ModelDecisions:
        from canary.rounds.deciding import ModelDecisions

        return ModelDecisions(
            self.store,
            self.probes.builtin_exclusions,
            self.rules,
            self.policy_version,
            {m.id: m.controls for m in self.settings.models},
        )

    @cached_property
    def metrics(self) -> ProcessMetrics:
        from canary.service.metrics import PROCESS

        return PROCESS

    def builtin_for(self, model: str) -> list[Exclusion]:
        return [e for e in self.probes.builtin_exclusions if e.model == model]

    def cost_of(self, observation: Observation, endpoint: Endpoint) -> float:
        return probe_cost(observation.usage, endpoint.pricing)


def decision_settings(settings: Settings, probes: ProbeSet) -> dict[str, Any]:
    """Every setting besides the policy rules that can change a verdict or a decision: its
    hash is part of the policy version."""
    o = settings.openrouter
    profiles = {"profiles": [p.model_dump(mode="json") for p in settings.profiles]}
    return {
        **(profiles if settings.profiles else {}),  # no profiles: the version stays as it was
        "ttft_threshold_s": settings.ttft_threshold_s,
        "ttft_samples": settings.ttft_samples,
        "languages": list(settings.languages),
        "timeouts": {
            "connect_s": o.connect_timeout_s,
            "first_token_s": o.first_token_timeout_s,
            "stream_s": o.stream_timeout_s,
            "listing_s": o.listing_deadline_s,
        },
        "max_tokens": o.max_tokens,
        "daily_budget_usd": settings.daily_budget_usd,
        "models": [m.model_dump(mode="json") for m in settings.models],
        "probes": dict(probes.checksums),
    }


def build_wiring(settings: Settings, *, store: Store | None = None, upgrade: bool = True) -> Wiring:
    probes = load_probes(settings.probes_dir, settings.languages)
    store = store or Store(settings.database_url)
    if upgrade:
        store.upgrade()
    return Wiring(settings, store, probes)


def openrouter_client(settings: Settings) -> OpenRouterClient:
    """The one HTTP client, configured from the settings (the key never leaves it)."""
    from canary.openrouter.client import OpenRouterClient

    o = settings.openrouter
    return OpenRouterClient(
        o.base_url,
        o.api_key.get_secret_value(),
        connect_timeout_s=o.connect_timeout_s,
        first_token_timeout_s=o.first_token_timeout_s,
        stream_timeout_s=o.stream_timeout_s,
        listing_deadline_s=o.listing_deadline_s,
        max_connections=max(settings.concurrency, 8),
        proxy=o.proxy.get_secret_value() or None,
    )
