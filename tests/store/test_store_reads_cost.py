"""Cost reads (spend per model since a time, the latest closed round per model), both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from canary.store import Store

T0 = datetime(2026, 4, 2, 0, 0, tzinfo=UTC)


def _round(
    store: Store,
    model: str,
    at: datetime,
    cost: float | None,
    *,
    status: str | None = "finished",
    skipped: tuple[dict[str, str], ...] = (),
) -> int:
    rid = store.claim_round(model, at, "test", "p-1", {}, started_at=at)
    assert rid is not None
    if status is not None:
        end = at + timedelta(minutes=1)
        store.finish_round(rid, status, cost_usd=cost, skipped=skipped, at=end)
    return rid


def test_round_spend_sums_each_models_rounds_since_a_time(store: Store, model: str) -> None:
    other = model + "-other"
    _round(store, model, T0 - timedelta(minutes=30), 5.0)  # yesterday: left out
    _round(store, model, T0 + timedelta(hours=1), 0.25)
    _round(store, model, T0 + timedelta(hours=2), 0.5, status="abandoned")  # it spent too
    _round(store, model, T0 + timedelta(hours=3), None)  # nothing recorded: counts as nothing
    _round(store, other, T0 + timedelta(hours=1), 1.0)
    spend = store.round_spend(T0)
    assert spend[model] == pytest.approx(0.75) and spend[other] == pytest.approx(1.0)
    assert store.round_spend(T0, model) == {model: pytest.approx(0.75)}
    assert store.round_spend(T0 + timedelta(days=1), model) == {}


def test_last_closed_round_is_the_newest_ended_one_with_its_cost_and_skipped(
    store: Store, model: str
) -> None:
    _round(store, model, T0 + timedelta(hours=1), 0.1)
    closed = _round(
        store, model, T0 + timedelta(hours=2), 0.2,
        skipped=({"provider": "zeta", "reason": "budget: sampled out"},),
    )  # fmt: skip
    _round(store, model, T0 + timedelta(hours=3), None, status=None)  # still running
    last = store.last_closed_rounds(model)
    assert list(last) == [model]
    row = last[model]
    assert row.id == closed and row.cost_usd == pytest.approx(0.2)
    assert row.skipped == ({"provider": "zeta", "reason": "budget: sampled out"},)


def test_last_closed_rounds_covers_every_model_and_none_before_a_round_ends(
    store: Store, model: str
) -> None:
    other = model + "-other"
    _round(store, model, T0 + timedelta(hours=1), 0.3)
    _round(store, other, T0 + timedelta(hours=1), None, status=None)
    every = store.last_closed_rounds()
    assert every[model].cost_usd == pytest.approx(0.3)
    assert other not in every
