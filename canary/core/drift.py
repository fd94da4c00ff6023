"""Endpoint drift: two metadata snapshots of a model's endpoints become a list of changes.

Providers change price, quantization, context length and supported parameters, or vanish, without
any outage. The endpoints list is fetched every round anyway; each round keeps one
:func:`snapshot_of` per endpoint, and :func:`diff_snapshots` compares the previous round's
snapshots with this round's.

What is diffed (one :class:`DriftChange` per field that changed):

- ``presence``: an endpoint appeared (old ``None``, new ``"present"``) or vanished (old
  ``"present"``, new ``None``; always an alert: a provider that vanished);
- ``pricing.prompt`` and ``pricing.completion`` (USD per token, as OpenRouter publishes them);
- ``quantization``, ``context_length``, ``max_completion_tokens``, ``status``;
- ``supported_parameters`` (old and new as sorted lists);
- ``capacity`` (tag ``None``): the model's endpoint count, reported when it changes and either
  side is below the model's capacity floor. Not an alert: what the floor means for routing is
  judged on the published list, as a floor episode (:mod:`canary.core.floor`).

``uptime_last_30m`` and ``latency_last_30m`` are kept in the snapshots only (for the status page
and the API beside our own measurements): they jitter every round, so they never make a change.

Alerts (the changes that can break routing):

- an endpoint stops advertising ``response_format`` or ``structured_outputs``;
- a price above the model's cap (``max_price``, USD per **million** tokens), also for an endpoint
  that appears already above it;
- a quantization below the model's floor (``min_quantization`` in ``quantization_order``); a
  quantization that is ``None``, ``"unknown"`` or not in the order never alerts on its own;
- an endpoint that vanished.

A change of an endpoint in a maintenance window in force is recorded but alerts nobody
(:func:`quieted`), the changes of what sits behind the model id (canary.core.served) too.

With no previous snapshots (the first round ever) there are no changes, and diffing a snapshot
against itself gives none: a change is reported once, in the round it happened.

Pure: no I/O, no clock. Snapshots are plain JSON-ready dicts so the store can keep them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import JsonValue

from canary.core.identity import Listed, excluded_by
from canary.core.model import Endpoint, Exclusion

PRESENCE = "presence"
CAPACITY = "capacity"
PRESENT = "present"
ROUTING_PARAMETERS = ("response_format", "structured_outputs")
# Diffed fields in the order changes are reported; the snapshot keys they come from.
_SCALAR_FIELDS = ("quantization", "context_length", "max_completion_tokens", "status")
RECORDED_ONLY = ("uptime_last_30m", "latency_last_30m")  # kept in snapshots, never diffed
PER_MILLION = 1_000_000  # prices are per token on the wire, per million tokens for people


def per_million(per_token: float) -> float:
    """A per-token price per million tokens, the float noise of the per-token form rounded away
    (what a price cap is compared with)."""
    return round(per_token * PER_MILLION, 9)


def below_floor(quantization: JsonValue, floor: str | None, order: Sequence[str]) -> bool | None:
    """Whether ``quantization`` ranks below ``floor`` in ``order`` (lowest first); None when either
    is not ranked: an unknown or unlisted quantization is never below a floor on its own."""
    if floor is None or floor not in order or quantization not in order:
        return None
    return order.index(str(quantization)) < order.index(floor)


@dataclass(frozen=True)
class DriftChange:
    """One field of one endpoint that changed between two rounds (tag ``None``: the whole model)."""

    model: str
    tag: str | None
    field: str
    old: JsonValue
    new: JsonValue
    alert: bool = False
    reason: str | None = None  # why it is an alert, readable ("price 4.0 > cap 2.0 USD/M prompt")

    def as_dict(self) -> dict[str, JsonValue]:
        return {
            "model": self.model,
            "provider": self.tag,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "alert": self.alert,
            "reason": self.reason,
        }


def quieted(
    changes: Iterable[DriftChange],
    windows: Sequence[Exclusion],
    listing: Iterable[Listed],
    now: datetime,
) -> tuple[DriftChange, ...]:
    """``changes``, those of an endpoint that a maintenance window in force names marked to alert
    nobody (an endpoint no longer in ``listing`` is named by its tag alone)."""
    listed = {e.tag: e for e in listing}
    return tuple(
        replace(c, alert=False)
        if c.tag and excluded_by(windows, listed.get(c.tag) or Listed(c.tag), now)
        else c
        for c in changes
    )


def snapshot_of(endpoint: Endpoint) -> dict[str, JsonValue]:
    """The tracked metadata of one endpoint, as a JSON-ready dict."""
    latency = endpoint.latency_last_30m
    return {
        "pricing": {"prompt": endpoint.pricing.prompt, "completion": endpoint.pricing.completion},
        "quantization": endpoint.quantization,
        "context_length": endpoint.context_length,
        "max_completion_tokens": endpoint.max_completion_tokens,
        "supported_parameters": list(sorted(set(endpoint.supported_parameters))),
        "status": endpoint.status,
        "uptime_last_30m": endpoint.uptime_last_30m,
        "latency_last_30m": dict(latency) if latency is not None else None,
        "service_tier": endpoint.service_tier,
    }


def diff_snapshots(
    model: str,
    before: Mapping[str, dict[str, JsonValue]] | None,
    after: Mapping[str, dict[str, JsonValue]],
    *,
    max_price: tuple[float | None, float | None] | None,
    min_quantization: str | None,
    capacity_floor: int,
    quantization_order: Sequence[str],
) -> tuple[DriftChange, ...]:
    """Changes from ``before`` to ``after`` (tag -> :func:`snapshot_of`), alerts marked.

    ``max_price`` is (prompt, completion) in USD per million tokens, either may be ``None``.
    ``before`` None means the first round ever: nothing to compare, no changes. An empty
    ``before`` is a previous listing with no endpoints: whatever is listed now appeared.
    """
    if before is None:
        return ()
    rules = _Rules(max_price, min_quantization, tuple(quantization_order))
    changes: list[DriftChange] = []
    for tag in sorted(set(before) | set(after)):
        old, new = before.get(tag), after.get(tag)
        if new is None:
            changes.append(DriftChange(model, tag, PRESENCE, PRESENT, None, True, "vanished"))
        elif old is None:
            reason = rules.appearance_alert(new)
            changes.append(
                DriftChange(model, tag, PRESENCE, None, PRESENT, reason is not None, reason)
            )
        else:
            changes.extend(_field_changes(model, tag, old, new, rules))
    capacity = _capacity_change(model, len(before), len(after), capacity_floor)
    if capacity is not None:
        changes.append(capacity)
    return tuple(changes)


@dataclass(frozen=True)
class _Rules:
    max_price: tuple[float | None, float | None] | None
    min_quantization: str | None
    order: tuple[str, ...]

    def price_alert(self, side: str, per_token: JsonValue) -> str | None:
        if self.max_price is None or not isinstance(per_token, int | float):
            return None
        cap = self.max_price[0 if side == "prompt" else 1]
        if cap is not None and per_million(per_token) > cap:
            return f"{side} price {_fmt(per_token * PER_MILLION)} > cap {_fmt(cap)} USD/M tokens"
        return None

    def quantization_alert(self, quantization: JsonValue) -> str | None:
        if below_floor(quantization, self.min_quantization, self.order):
            return f"quantization {quantization} < floor {self.min_quantization}"
        return None

    def appearance_alert(self, snapshot: Mapping[str, JsonValue]) -> str | None:
        pricing = snapshot.get("pricing")
        pricing = pricing if isinstance(pricing, dict) else {}
        reasons = [
            self.price_alert("prompt", pricing.get("prompt")),
            self.price_alert("completion", pricing.get("completion")),
            self.quantization_alert(snapshot.get("quantization")),
        ]
        found = [r for r in reasons if r is not None]
        return "; ".join(found) if found else None


def _field_changes(
    model: str, tag: str, old: Mapping[str, JsonValue], new: Mapping[str, JsonValue], rules: _Rules
) -> list[DriftChange]:
    changes: list[DriftChange] = []
    old_pricing, new_pricing = old.get("pricing"), new.get("pricing")
    if isinstance(old_pricing, Mapping) and isinstance(new_pricing, Mapping):
        for side in ("prompt", "completion"):
            if (
                side in old_pricing
                and side in new_pricing
                and old_pricing[side] != new_pricing[side]
            ):
                reason = rules.price_alert(side, new_pricing[side])
                changes.append(
                    DriftChange(
                        model, tag, f"pricing.{side}", old_pricing[side], new_pricing[side],
                        reason is not None, reason,
                    )
                )  # fmt: skip
    for name in _SCALAR_FIELDS:
        # A key missing on either side (an older snapshot format) is not comparable: no change.
        if name in old and name in new and old[name] != new[name]:
            reason = rules.quantization_alert(new[name]) if name == "quantization" else None
            changes.append(
                DriftChange(model, tag, name, old[name], new[name], reason is not None, reason)
            )
    if "supported_parameters" in old and "supported_parameters" in new:
        was, now = (_names(side["supported_parameters"]) for side in (old, new))
        if was != now:
            dropped = [p for p in ROUTING_PARAMETERS if p in was and p not in now]
            reason = f"stopped advertising {', '.join(dropped)}" if dropped else None
            changes.append(
                DriftChange(model, tag, "supported_parameters", was, now, bool(dropped), reason)
            )
    return changes


def _capacity_change(model: str, was: int, now: int, floor: int) -> DriftChange | None:
    if was == now or (was >= floor and now >= floor):
        return None
    reason = f"{now} endpoints < capacity floor {floor}" if now < floor else None
    return DriftChange(model, None, CAPACITY, was, now, False, reason)


def ttft_state(
    figures: Mapping[str, float | int | None], bound_p95_s: float, *, min_samples: int = 1
) -> str:
    """``degraded`` when the window's p95 is over ``bound_p95_s``, ``healthy`` otherwise,
    ``unknown`` with fewer than ``min_samples`` samples. Information only: it never quarantines
    on its own."""
    n = figures.get("n") or 0
    if not n or n < min_samples:
        return "unknown"
    p95 = figures.get("p95")
    return "degraded" if p95 is not None and p95 > bound_p95_s else "healthy"


def _fmt(value: float) -> str:
    return f"{value:g}"


def _names(value: JsonValue) -> list[JsonValue]:
    """A snapshot's parameter names, sorted (none when it holds no list)."""
    return list[JsonValue](sorted({str(v) for v in value}) if isinstance(value, list) else ())
