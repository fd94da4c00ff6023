"""What probing costs, as operators see it: the latest round per model, each model's last 24 h,
today (UTC) for all models, and the daily budget with what is left of it.

Figures come from ``rounds.cost_usd`` (reported costs, estimated from the endpoint's prices
where a probe had none); a round counts once it has ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from canary.core.budget import day_start
from canary.core.model import DAY
from canary.store.repository import Store
from canary.store.rows import RoundRow, SkippedEndpoint
from canary.views.records import Time, answer, iso


@answer
class LastRound(TypedDict):
    id: int
    scheduled_at: Time
    finished_at: Time
    status: str
    cost_usd: float | None
    skipped: Annotated[
        list[SkippedEndpoint], Field(description="Endpoints not probed in that round, with why.")
    ]


@answer
class CostDay(TypedDict):
    day_start: Time
    today_usd: Annotated[float | None, Field(description="All models, since midnight UTC.")]
    daily_budget_usd: float | None
    budget_left_usd: float | None  # None without a daily budget


@answer
class ModelSpend(TypedDict):
    model: str
    last_round: LastRound | None
    last_24h_usd: float | None
    today_usd: float | None


class CostView(TypedDict):
    day: CostDay
    models: list[ModelSpend]


@answer
class CostBody(TypedDict):
    at: Time
    day: CostDay
    models: list[ModelSpend]


@answer
class ModelCost(TypedDict):
    """One model's spend with the day block beside it."""

    last_round: LastRound | None
    last_24h_usd: float | None
    today_usd: float | None
    day: CostDay


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def last_round_json(row: RoundRow | None) -> LastRound | None:
    if row is None:
        return None
    return {
        "id": row.id,
        "scheduled_at": iso(row.scheduled_at),
        "finished_at": iso(row.finished_at),
        "status": row.status,
        "cost_usd": _usd(row.cost_usd),
        "skipped": list(row.skipped),
    }


def cost_view(
    store: Store, models: Iterable[str], now: datetime, daily_budget_usd: float | None
) -> CostView:
    """``{"day": {...}, "models": [{model, last_round, last_24h_usd, today_usd}]}``; three reads."""
    start = day_start(now)
    today = store.round_spend(start)
    last_24h = store.round_spend(now - DAY)
    last = store.last_closed_rounds()
    spent = sum(today.values())
    day: CostDay = {
        "day_start": iso(start),
        "today_usd": _usd(spent),
        "daily_budget_usd": daily_budget_usd,
        "budget_left_usd": None
        if daily_budget_usd is None
        else _usd(max(0.0, daily_budget_usd - spent)),
    }
    return {
        "day": day,
        "models": [
            {
                "model": model,
                "last_round": last_round_json(last.get(model)),
                "last_24h_usd": _usd(last_24h.get(model, 0.0)),
                "today_usd": _usd(today.get(model, 0.0)),
            }
            for model in sorted(set(models))
        ],
    }


def model_cost(view: CostView, model: str) -> ModelCost:
    """One model's entry of a :func:`cost_view`, with the day block beside it."""
    entry = next(m for m in view["models"] if m["model"] == model)
    return {
        "last_round": entry["last_round"],
        "last_24h_usd": entry["last_24h_usd"],
        "today_usd": entry["today_usd"],
        "day": view["day"],
    }
