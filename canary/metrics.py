"""Prometheus metrics on a dedicated registry (never the global one), names prefixed ``canary_``.

The runner calls the ``observe_*``/``set_*`` functions; the API renders :data:`REGISTRY` at
``GET /metrics``. Labels are bounded: contracts and results are enums, models come from the
settings and providers from the endpoints list.
"""

from __future__ import annotations

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
ROUND_COST = Gauge("canary_round_cost_usd", "Cost of the last round, USD.", registry=REGISTRY)
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


def observe_round(duration_s: float, cost_usd: float | None) -> None:
    ROUNDS.inc()
    ROUND_DURATION.observe(max(0.0, duration_s))
    cost = max(0.0, cost_usd or 0.0)
    ROUND_COST.set(cost)
    COST.inc(cost)


def observe_ttft(model: str, provider: str, seconds: float) -> None:
    TTFT.labels(model=model, provider=provider).observe(max(0.0, seconds))


def set_quarantines(model: str, n: int) -> None:
    QUARANTINES_ACTIVE.labels(model=model).set(n)


def set_ignore_list(model: str, *, age_s: float, stale: bool, entries: int) -> None:
    IGNORE_LIST_AGE.labels(model=model).set(max(0.0, age_s))
    IGNORE_LIST_STALE.labels(model=model).set(1 if stale else 0)
    IGNORE_LIST_ENTRIES.labels(model=model).set(entries)


def observe_notification(sent: bool) -> None:
    NOTIFICATIONS.labels(outcome="sent" if sent else "failed").inc()


def render() -> tuple[bytes, str]:
    """The exposition text of :data:`REGISTRY` and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
