"""Prometheus metrics, names prefixed ``canary_``, on registries of our own (never the global one).

Two kinds, kept apart:

* per process, on :data:`REGISTRY`: counters of what this replica did (contract results judged,
  probe requests by transport class, rounds run and their wall time, probe spend, webhook
  deliveries), held by :data:`PROCESS`; the runner and the notifier call its ``observe_*``
  methods.
* per fleet, from :class:`FleetCollector`: what the store and the served lists say (endpoint
  states, the capacity floor, rounds, quarantines, latency, spend, the outbox), the same on every
  replica, built at scrape time from :mod:`canary.service.fleet_figures`.

Labels are bounded: contracts, results and states are enums, models come from the settings and
providers from the latest endpoints list. README ("Metrics and alerts") counts the series.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from canary import __version__
from canary.core.model import Contract, Result, Transport
from canary.core.reports import Outcome
from canary.service.fleet_figures import ListFigures, StoreFigures
from canary.views.providers import STATES

REGISTRY = CollectorRegistry(auto_describe=True)


class ProcessMetrics:
    """What this replica did, as counters on ``registry``: they only grow, so summing them over
    replicas is right. Every label value starts at 0, so rate() and increase() see the first
    event."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.probes = Counter(
            "canary_probes",
            "Contract results judged by this process, by contract and result.",
            ("contract", "result"),
            registry=registry,
        )
        self.probe_transports = Counter(
            "canary_probe_transport",
            "Probe requests sent by this process, by how the wire answered (transport class: ok, "
            "rate_limited, provider_error, timeout, unroutable, auth_config, bad_request). "
            "auth_config: OpenRouter itself refused the request (key, credits, permissions, "
            "base URL).",
            ("transport",),
            registry=registry,
        )
        self.rounds = Counter(
            "canary_rounds", "Model rounds run by this process.", registry=registry
        )
        self.round_duration = Histogram(
            "canary_round_duration_seconds",
            "Wall time of one model's round run by this process.",
            buckets=(1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600),
            registry=registry,
        )
        self.cost = Counter(
            "canary_cost_usd", "Probe spend of the rounds this process ran, USD.", registry=registry
        )
        self.notifications = Counter(
            "canary_notifications",
            "Deliveries to webhooks and notifiers by this process, by outcome (sent, failed).",
            ("outcome",),
            registry=registry,
        )
        self.reports = Counter(
            "canary_reports",
            "Apps' reports this process settled, by outcome (confirmed, not_confirmed, "
            "model_wide, unattributed, in_maintenance, rate_limited, over_budget).",
            ("outcome",),
            registry=registry,
        )
        for settled in Outcome:
            if settled is not Outcome.pending:
                self.reports.labels(outcome=settled.value)
        for contract in Contract:
            for result in Result:
                self.probes.labels(contract=contract.value, result=result.value)
        for outcome in ("sent", "failed"):
            self.notifications.labels(outcome=outcome)
        for transport in Transport:
            self.probe_transports.labels(transport=transport.value)

    def observe_probe(self, contract: str, result: str) -> None:
        self.probes.labels(contract=str(contract), result=str(result)).inc()

    def observe_transports(self, transports: Iterable[str]) -> None:
        """One round's probe requests, by transport class (one increment per class)."""
        for transport, count in Tally(transports).items():
            self.probe_transports.labels(transport=str(transport)).inc(count)

    def observe_round(self, duration_s: float, cost_usd: float | None) -> None:
        self.rounds.inc()
        self.round_duration.observe(max(0.0, duration_s))
        self.cost.inc(max(0.0, cost_usd or 0.0))

    def observe_report(self, outcome: str) -> None:
        if outcome != Outcome.pending.value:
            self.reports.labels(outcome=outcome).inc()

    def observe_notification(self, sent: bool) -> None:
        self.notifications.labels(outcome="sent" if sent else "failed").inc()


PROCESS = ProcessMetrics(REGISTRY)


@dataclass(frozen=True)
class FleetSettings:
    """What the fleet metrics take from the settings."""

    round_interval_s: float
    daily_budget_usd: float | None


def _per_model(
    name: str, doc: str, family: type[GaugeMetricFamily | CounterMetricFamily] = GaugeMetricFamily
) -> GaugeMetricFamily | CounterMetricFamily:
    return family(name, doc, labels=["model"])


class FleetCollector(Collector):
    """The fleet's figures as metric families: the store's (None before the first good read),
    whether its latest read succeeded, and the served lists'. ``now`` is the scrape time."""

    def __init__(
        self,
        store: StoreFigures | None,
        lists: Iterable[ListFigures],
        settings: FleetSettings,
        now: datetime,
        *,
        store_up: bool,
    ) -> None:
        self.store = store
        self.store_up = store_up
        self.lists = tuple(lists)
        self.settings = settings
        self.now = now

    def collect(self) -> Iterator[Metric]:
        yield from self._constants()
        yield from self._lists()
        if self.store is not None:
            yield from self._endpoints(self.store)
            yield from self._rounds(self.store)
            yield from self._spend_and_outbox(self.store)

    def _constants(self) -> Iterator[Metric]:
        build = GaugeMetricFamily(
            "canary_build_info", "The running canary's version (always 1).", labels=["version"]
        )
        build.add_metric([__version__], 1)
        yield build
        yield GaugeMetricFamily(
            "canary_store_up",
            "1 when this replica's latest read of the store's figures succeeded, else 0 (also "
            "before the first good read, when no store figure is exported yet).",
            value=1 if self.store_up else 0,
        )
        yield GaugeMetricFamily(
            "canary_round_interval_seconds",
            "interval_minutes of the settings, in seconds: one round per model per interval.",
            value=self.settings.round_interval_s,
        )

    def _lists(self) -> Iterator[Metric]:
        floor = _per_model("canary_capacity_floor", "The model's capacity floor (endpoints).")
        usable = _per_model(
            "canary_usable_endpoints",
            "Listed endpoints no entry of the served list names (absent before the first listing).",
        )
        breached = _per_model(
            "canary_floor_breached", "1 when usable endpoints are below the capacity floor."
        )
        withheld = _per_model(
            "canary_quarantines_withheld",
            "Quarantines held back from the served list by the capacity floor.",
        )
        entries = _per_model("canary_ignore_list_entries", "Providers in the served ignore list.")
        active = _per_model(
            "canary_quarantines_active", "Enforced quarantines published in the served list."
        )
        age = _per_model(
            "canary_ignore_list_age_seconds",
            "Time since the served list was last rebuilt from the store (this replica).",
        )
        stale = _per_model(
            "canary_ignore_list_stale",
            "1 when this replica serves the last good list because the store is unreachable.",
        )
        per_profile = ["model", "profile"]
        profile_breached = GaugeMetricFamily(
            "canary_profile_floor_breached",
            "1 when a task profile's list leaves fewer usable endpoints than the capacity floor.",
            labels=per_profile,
        )
        profile_usable = GaugeMetricFamily(
            "canary_profile_usable_endpoints",
            "Listed endpoints no entry of a task profile's list names.",
            labels=per_profile,
        )
        profile_missing = GaugeMetricFamily(
            "canary_profile_requirement_excluded",
            "Endpoints a task profile's list excludes for a requirement they miss.",
            labels=per_profile,
        )
        for f in self.lists:
            if f.profile is not None:
                m = [f.model, f.profile]
                profile_breached.add_metric(m, 1 if f.floor_breached else 0)
                if f.usable_endpoints is not None:
                    profile_usable.add_metric(m, f.usable_endpoints)
                profile_missing.add_metric(m, f.requirements)
                continue
            m = [f.model]
            floor.add_metric(m, f.capacity_floor)
            if f.usable_endpoints is not None:
                usable.add_metric(m, f.usable_endpoints)
            breached.add_metric(m, 1 if f.floor_breached else 0)
            withheld.add_metric(m, f.withheld)
            entries.add_metric(m, f.entries)
            active.add_metric(m, f.quarantines)
            age.add_metric(m, f.age_s)
            stale.add_metric(m, 1 if f.stale else 0)
        yield from (floor, usable, breached, withheld, entries, active, age, stale)
        yield from (profile_breached, profile_usable, profile_missing)

    def _endpoints(self, store: StoreFigures) -> Iterator[Metric]:
        ep = ["model", "provider"]
        state = GaugeMetricFamily(
            "canary_endpoint_state",
            "1 for the endpoint's routing state, 0 for the others (healthy, suspect, "
            "quarantined, excluded, unknown).",
            labels=[*ep, "state"],
        )
        ttft = GaugeMetricFamily(
            "canary_ttft_percentile_seconds",
            "Time to first token per endpoint over a window (24h, 7d): nearest-rank percentile "
            "(p50, p95, p99) of the store's latency histograms.",
            labels=[*ep, "window", "percentile"],
        )
        peers = GaugeMetricFamily(
            "canary_ttft_peers_p95_seconds",
            "Median of the 24 h p95 time to first token of the model's other endpoints.",
            labels=ep,
        )
        degraded = GaugeMetricFamily(
            "canary_latency_degraded",
            "1 when the endpoint's 24 h p95 time to first token is over latency_degraded_p95_s "
            "(information only: never a quarantine).",
            labels=ep,
        )
        success = GaugeMetricFamily(
            "canary_probe_success",
            "1 when the contract passed on the endpoint in its latest judged round, 0 when it "
            "failed; absent when it was inconclusive, not applicable or a transport error.",
            labels=[*ep, "contract"],
        )
        last_ttft = GaugeMetricFamily(
            "canary_ttft_last_seconds",
            "The endpoint's latest time-to-first-token sample (within a day).",
            labels=ep,
        )
        for e in store.endpoints:
            who = [e.model, e.provider]
            for contract, passed in sorted(e.success.items()):
                success.add_metric([*who, contract], passed)
            if e.last_ttft_s is not None:
                last_ttft.add_metric(who, e.last_ttft_s)
            for name in STATES:
                state.add_metric([*who, name], 1 if name == e.state else 0)
            for (window, percentile), seconds in sorted(e.ttft_s.items()):
                ttft.add_metric([*who, window, percentile], seconds)
            if e.peers_p95_24h_s is not None:
                peers.add_metric(who, e.peers_p95_24h_s)
            degraded.add_metric(who, 1 if e.latency_degraded else 0)
        yield from (state, ttft, peers, degraded, success, last_ttft)

    def _rounds(self, store: StoreFigures) -> Iterator[Metric]:
        success = _per_model(
            "canary_last_round_success_timestamp_seconds",
            "End of the model's latest finished round, Unix time (absent before the first).",
        )
        duration = _per_model(
            "canary_last_round_duration_seconds", "Wall time of the model's latest finished round."
        )
        cost = _per_model(
            "canary_round_cost_usd", "Probe spend of the model's latest finished round, USD."
        )
        weak = _per_model(
            "canary_probe_weak",
            "1 when the refusal probe of the model's latest finished round was weak (the "
            "positive control passed or was missing): its refusal results prove nothing.",
        )
        started = _per_model(
            "canary_quarantines_started",
            "Quarantines started for the model, ever (from the store).",
            CounterMetricFamily,
        )
        would = _per_model(
            "canary_would_quarantines",
            "Quarantines observe mode would have started for the model, ever: its "
            "would_quarantine audit rows (from the store).",
            CounterMetricFamily,
        )
        conclusive = _per_model(
            "canary_conclusive_probes",
            "Pass or fail results (not inconclusive, not transport errors) in the model's latest "
            "judged round: 0 means that round told nothing about any provider.",
        )
        outliers = GaugeMetricFamily(
            "canary_equality_outliers",
            "Endpoints whose latest equality check failed (advisory: their answers differ from "
            "their peers'; nothing is quarantined).",
            labels=["model"],
        )
        for f in store.models:
            m = [f.model]
            conclusive.add_metric(m, f.conclusive)
            outliers.add_metric(m, f.equality_outliers)
            if f.last_success_at is not None:
                success.add_metric(m, f.last_success_at.timestamp())
            if f.last_duration_s is not None:
                duration.add_metric(m, f.last_duration_s)
            if f.last_cost_usd is not None:
                cost.add_metric(m, f.last_cost_usd)
            weak.add_metric(m, 1 if f.probe_weak else 0)
            started.add_metric(m, f.quarantines_started)
            would.add_metric(m, f.would_quarantines)
        yield from (success, duration, cost, weak, started, would, conclusive, outliers)

    def _spend_and_outbox(self, store: StoreFigures) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "canary_cost_usd_today",
            "Probe spend of all models since midnight UTC, USD.",
            value=store.spent_today_usd,
        )
        budget = self.settings.daily_budget_usd
        if budget is not None:
            yield GaugeMetricFamily(
                "canary_daily_budget_usd", "daily_budget_usd of the settings.", value=budget
            )
            yield GaugeMetricFamily(
                "canary_budget_left_usd",
                "What is left of daily_budget_usd today, USD.",
                value=max(0.0, budget - store.spent_today_usd),
            )
        yield GaugeMetricFamily(
            "canary_webhook_failing_deliveries",
            "Outbox rows whose delivery (webhook or notifier) was tried and failed, not yet "
            "delivered (retried with backoff).",
            value=store.failing_deliveries,
        )
        yield GaugeMetricFamily(
            "canary_store_figures_age_seconds",
            "Time since the figures read from the store were last read successfully.",
            value=max(0.0, (self.now - store.read_at).total_seconds()),
        )


def render(fleet: Collector) -> tuple[bytes, str]:
    """The exposition text of this process's counters and the fleet's figures, and its type."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ProcessCounters())
    registry.register(fleet)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _ProcessCounters(Collector):
    """:data:`REGISTRY` without its ``_created`` series: they would double every counter's and
    say nothing a restart does not already say."""

    def collect(self) -> Iterator[Metric]:
        for metric in REGISTRY.collect():  # fresh objects on every call: ours to trim
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric
