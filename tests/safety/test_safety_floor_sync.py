"""Recording the floor reads, reconciles and writes in one transaction under the model's guard.

A read made before another replica or an operator changed the layers must not be written: each
test changes the layers right after the floor's first read, the moment a stale read used to be
applied, and checks that only what the layers say after the change is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from canary.core.model import Endpoint, EventKind, Exclusion, Layer, Mode, Pricing
from canary.core.policy import PolicyRules
from canary.rounds.deciding import ModelDecisions
from canary.store.repository import Store
from canary.store.rows import ModelLayers

T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
_models = count(1)


class RacingStore(Store):
    """A store where someone else changes the layers just after the next read of them."""

    meanwhile: Callable[[Store], None] | None = None

    def model_layers(
        self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
    ) -> dict[str, ModelLayers]:
        layers = super().model_layers(models, now)
        change, self.meanwhile = self.meanwhile, None
        if change is not None:
            change(self)
        return layers


@pytest.fixture(scope="module")
def store(store_url: str) -> Iterator[RacingStore]:
    racing = RacingStore(store_url)
    racing.upgrade()
    yield racing
    racing.dispose()


def listed(store: Store, model: str, *tags: str, at: datetime) -> None:
    store.record_snapshots(None, model, [Endpoint(model, t, t, Pricing(0, 0)) for t in tags], at)


def decisions(store: Store, builtin: Sequence[Exclusion]) -> ModelDecisions:
    return ModelDecisions(store, tuple(builtin), PolicyRules(mode=Mode.enforce), "p-sync")


def test_a_listing_that_grew_after_the_read_opens_no_episode(store: RacingStore) -> None:
    model = f"acme/sync-{next(_models)}"
    listed(store, model, "alpha", "bravo", at=T0)
    builtin = [Exclusion(model, "bravo", Layer.builtin, "reviewed")]  # alpha alone: breached
    store.meanwhile = lambda s: listed(s, model, "alpha", "bravo", "charlie", at=T0 + timedelta(1))
    written = decisions(store, builtin).sync_floor([model], {model: 2}, T0 + timedelta(days=2))
    assert written == []
    assert store.floor_episodes(model) == []
    assert store.audit(model, events=[EventKind.floor_breached]) == []


def test_an_operator_change_after_the_read_is_what_gets_recorded(store: RacingStore) -> None:
    model = f"acme/sync-{next(_models)}"
    listed(store, model, "alpha", "bravo", at=T0)
    store.add_exclusion(model, "bravo", "incident", "ops", None, T0, builtin=(), floor=2,
                        force=True)  # fmt: skip
    [episode] = store.floor_episodes(model)
    [bravo] = store.active_exclusions(model, T0)
    store.remove_exclusion(bravo.id or 0, "ops", "resolved", T0 + timedelta(minutes=1))
    # the floor is met again, but before the episode is closed an operator forces alpha out
    store.meanwhile = lambda s: s.add_exclusion(
        model, "alpha", "incident", "ops", None, T0 + timedelta(minutes=2), builtin=(), floor=2,
        force=True,
    )  # fmt: skip
    written = decisions(store, ()).sync_floor([model], {model: 2}, T0 + timedelta(minutes=3))
    assert written == []
    [still] = store.floor_episodes(model)
    assert still.id == episode.id and still.open  # breached again: the episode stays open
    assert store.audit(model, events=[EventKind.floor_restored]) == []
