"""Maintenance windows in the store: added, listed, ended by time or by hand, each audited; the
same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from canary.core.events import MaintenanceAdded, MaintenanceRemoved
from canary.core.model import Layer
from canary.store import Store, UnknownExclusion
from canary.store.rows import WindowInForce

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _windows(store: Store, model: str | None, at: datetime) -> list[tuple[str, str]]:
    return [(w.model, w.tag) for w in store.active_exclusions(model, at, Layer.maintenance)]


def test_a_window_is_audited_listed_until_it_ends_and_never_an_exclusion(
    store: Store, model: str
) -> None:
    guard = store.guard_version(model)
    first = store.add_maintenance(model, "alpha", "upgrade", "bob", T0 + 2 * HOUR, T0)
    store.add_maintenance(model, "beta/fp8", "move", "bob", T0 + HOUR, T0, policy_version="p-1")
    assert store.guard_version(model) == guard + 2  # a round deciding meanwhile decides again
    [alpha, beta] = store.active_exclusions(model, T0, Layer.maintenance)
    assert (alpha.id, alpha.layer, alpha.reason, alpha.since, alpha.until) == (
        first, Layer.maintenance, "upgrade", T0, T0 + 2 * HOUR,
    )  # fmt: skip
    assert beta.tag == "beta/fp8"
    assert _windows(store, model, T0 + HOUR) == [(model, "alpha")]  # beta's ended by itself
    assert _windows(store, model, T0 + 2 * HOUR) == []
    assert store.active_exclusions(model, T0) == []  # not the runtime layer
    assert store.model_layers([model], T0)[model].runtime == ()
    [row] = [r for r in store.audit(model) if r.tag == "alpha"]
    assert row.event == "maintenance_added" and row.actor == "bob"
    assert row.decided == MaintenanceAdded(
        model=model, tag="alpha", id=first, reason="upgrade", until=T0 + 2 * HOUR
    )


def test_a_second_window_for_the_same_provider_is_refused_while_one_is_in_force(
    store: Store, model: str
) -> None:
    first = store.add_maintenance(model, "alpha", "upgrade", "bob", T0 + HOUR, T0)
    with pytest.raises(WindowInForce, match=f"id {first}"):
        store.add_maintenance(model, "alpha", "again", "bob", T0 + 2 * HOUR, T0 + HOUR / 2)
    store.add_maintenance(model, "alpha/fp8", "one endpoint", "bob", T0 + HOUR, T0)
    store.add_maintenance(model, "alpha", "the next one", "bob", T0 + 3 * HOUR, T0 + HOUR)
    assert [e.reason for e in store.active_exclusions(model, T0 + HOUR, Layer.maintenance)] == [
        "the next one"
    ]


def test_removing_a_window_ends_it_now_and_is_audited(store: Store, model: str) -> None:
    window = store.add_maintenance(model, "alpha", "upgrade", "bob", T0 + 5 * HOUR, T0)
    guard = store.guard_version(model)
    removed = store.remove_exclusion(
        window, "carol", "done early", T0 + HOUR, layer=Layer.maintenance
    )
    assert (removed.tag, removed.layer, removed.reason) == ("alpha", Layer.maintenance, "upgrade")
    assert _windows(store, model, T0 + HOUR) == []
    assert store.guard_version(model) == guard + 1
    latest = store.audit(model)[0]
    assert (latest.event, latest.actor) == ("maintenance_removed", "carol")
    assert latest.decided == MaintenanceRemoved(
        model=model, tag="alpha", id=window, reason="done early", was="upgrade"
    )
    with pytest.raises(UnknownExclusion, match=f"no active maintenance window with id {window}"):
        store.remove_exclusion(window, "carol", "twice", T0 + HOUR, layer=Layer.maintenance)
