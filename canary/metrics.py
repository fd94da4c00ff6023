"""Prometheus metrics on a dedicated registry (never the global one), names prefixed ``canary_``.

The runner calls the ``observe_*`` functions; the API renders :data:`REGISTRY` at
``GET /metrics``, first setting the gauges read from the store (latency per endpoint and window,
cost today and per model's latest round) with :func:`set_latency` and :func:`set_cost`, at most
every 30 seconds, so every replica shows the same figures. Labels are bounded: contracts and
results are enums, models come from the settings and providers from the endpoints list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

REGISTRY = CollectorRegistry(auto_describe=True)

PROBES = Counter(
    "canary_probes",
    "Contract results judged, by contract and result.",
    ("contract", "result"),
    registry=REGISTRY,
)
QUARANTINES_ACTIVE = Gauge(
    "canary_quarantines_active",
    "Enforced quarantines in force, per model.",
    ("model",),
    registry=REGISTRY,
)
ROUNDS = Counter("canary_rounds", "Rounds finished by this process.", registry=REGISTRY)
ROUND_DURATION = Histogram(
    "canary_round_duration_seconds",
    "Wall time of one round (all models).",
    buckets=(1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600),
    registry=REGISTRY,
)
ROUND_COST = Gauge(
    "canary_round_cost_usd",
    "Cost of the latest ended round of a model, USD.",
    ("model",),
    registry=REGISTRY,
)
COST_TODAY = Gauge(
    "canary_cost_usd_today",
    "Probe spend of all models since midnight UTC, USD (from the store: every replica agrees).",
    registry=REGISTRY,
)
BUDGET_LEFT = Gauge(
    "canary_budget_left_usd",
    "What is left of daily_budget_usd today, USD (absent when no budget is configured).",
    registry=REGISTRY,
)
TTFT_P95 = Gauge(
    "canary_ttft_p95_seconds",
    "p95 of our own time to first token per endpoint over a window (24h, 7d), from the store.",
    ("model", "provider", "window"),
    registry=REGISTRY,
)
LATENCY_DEGRADED = Gauge(
    "canary_latency_degraded",
    "1 when an endpoint's 24 h ttft p95 is over latency_degraded_p95_s (information only).",
    ("model", "provider"),
    registry=REGISTRY,
)
COST = Counter("canary_cost_usd", "Probe spend since this process started, USD.", registry=REGISTRY)
TTFT = Histogram(
    "canary_ttft_seconds",
    "Time to first token measured on the stream, per model and provider.",
    ("model", "provider"),
    buckets=(0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30),
    registry=REGISTRY,
)
IGNORE_LIST_AGE = Gauge(
    "canary_ignore_list_age_seconds",
    "Age of the ignore list served for a model (time since it was last rebuilt from the store).",
    ("model",),
    registry=REGISTRY,
)
IGNORE_LIST_STALE = Gauge(
    "canary_ignore_list_stale",
    "1 when the served ignore list is the last good one because the store is unreachable.",
    ("model",),
    registry=REGISTRY,
)
IGNORE_LIST_ENTRIES = Gauge(
    "canary_ignore_list_entries",
    "Providers in the served ignore list, per model.",
    ("model",),
    registry=REGISTRY,
)
NOTIFICATIONS = Counter(
    "canary_notifications",
    "Webhook deliveries, by outcome (sent, failed).",
    ("outcome",),
    registry=REGISTRY,
)


def observe_probe(contract: str, result: str) -> None:
    PROBES.labels(contract=str(contract), result=str(result)).inc()


def observe_round(duration_s: float, cost_usd: float | None, model: str | None = None) -> None:
    ROUNDS.inc()
    ROUND_DURATION.observe(max(0.0, duration_s))
    cost = max(0.0, cost_usd or 0.0)
    if model is not None:
        ROUND_COST.labels(model=model).set(cost)
    COST.inc(cost)


def observe_ttft(model: str, provider: str, seconds: float) -> None:
    TTFT.labels(model=model, provider=provider).observe(max(0.0, seconds))


def set_quarantines(model: str, n: int) -> None:
    QUARANTINES_ACTIVE.labels(model=model).set(n)


def set_ignore_list(model: str, *, age_s: float, stale: bool, entries: int) -> None:
    IGNORE_LIST_AGE.labels(model=model).set(max(0.0, age_s))
    IGNORE_LIST_STALE.labels(model=model).set(1 if stale else 0)
    IGNORE_LIST_ENTRIES.labels(model=model).set(entries)


def set_latency(figures: Iterable[tuple[str, str, Mapping[str, float | None], bool]]) -> None:
    """Replace every latency series: (model, provider, {window: p95 or None}, degraded) each.

    Windows without samples get no series (rather than a made-up zero)."""
    TTFT_P95.clear()
    LATENCY_DEGRADED.clear()
    for model, provider, p95s, degraded in figures:
        for window, p95 in p95s.items():
            if p95 is not None:
                TTFT_P95.labels(model=model, provider=provider, window=window).set(p95)
        LATENCY_DEGRADED.labels(model=model, provider=provider).set(1 if degraded else 0)


def set_cost(
    today_usd: float, round_costs: Mapping[str, float | None], budget_left_usd: float | None
) -> None:
    """Today's spend, each model's latest round and the budget left, as read from the store."""
    COST_TODAY.set(max(0.0, today_usd))
    for model, cost in round_costs.items():
        ROUND_COST.labels(model=model).set(max(0.0, cost or 0.0))
    if budget_left_usd is not None:
        BUDGET_LEFT.set(max(0.0, budget_left_usd))


def observe_notification(sent: bool) -> None:
    NOTIFICATIONS.labels(outcome="sent" if sent else "failed").inc()


def render() -> tuple[bytes, str]:
    """The exposition text of :data:`REGISTRY` and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
