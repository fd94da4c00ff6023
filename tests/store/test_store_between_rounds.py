"""Between rounds the daemon's housekeeping (every 15 s) reads the store in a few statements,
whatever the number of models, and still releases what has ended and records what the floor
does: the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy import event
from sqlalchemy.engine import Connection

from canary.config.settings import ModelSettings, Settings
from canary.core.events import event_of
from canary.core.model import (
    Contract,
    Endpoint,
    EndpointState,
    EventKind,
    Look,
    Mode,
    Pricing,
    Streak,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import QuarantineStart
from canary.rounds.deciding import ModelDecisions
from canary.service.daemon import keep_decisions
from canary.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
LOOKS = (Look.round(7, T0 - timedelta(minutes=30)), Look.round(8, T0))


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    """Every statement sent to the store while the block runs (SQLite's BEGIN left out)."""
    sent: list[str] = []

    def count(conn: Connection, cursor: object, statement: str, *rest: object) -> None:
        if statement != "BEGIN":
            sent.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield sent
    finally:
        event.remove(store.engine, "before_cursor_execute", count)


def listed(store: Store, model: str, *tags: str) -> None:
    endpoints = [Endpoint(model, t, t.title(), Pricing(0.0, 0.0)) for t in tags]
    store.record_snapshots(None, model, endpoints, T0)


def quarantined(store: Store, model: str, tag: str) -> None:
    """A quarantine of ``tag`` until T0 + 1 day, decided as a round would."""
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    state = EndpointState(
        model, tag, streaks=(Streak(Contract.language, 2, T0, LOOKS),), quarantined_since=T0,
        quarantined_until=T0 + DAY, causes=("language",), ladder_step=1, last_quarantine_at=T0,
    )  # fmt: skip
    start = QuarantineStart(model, tag, T0, T0 + DAY, 1, "language", LOOKS, ("language",))
    event_ = event_of(EventKind.quarantine, model, tag, {}, LOOKS)
    assert store.apply_decision(
        round_id=round_id, model=model, before={}, after={tag: state}, events=[event_],
        quarantines_started=[start], actor="rounds", policy_version="p-1", at=T0,
    )  # fmt: skip


def watching(store: Store, models: list[str]) -> Settings:
    return Settings(database_url=store.url, models=tuple(ModelSettings(id=m) for m in models))


def test_housekeeping_reads_as_many_statements_for_eight_models_as_for_two(
    store: Store, model: str
) -> None:
    models = [f"{model}-{i}" for i in range(8)]
    for m in models:
        listed(store, m, "alpha", "bravo", "charlie")
    quarantined(store, models[5], "bravo")  # two usable left: the floor (2) holds
    decisions = ModelDecisions(store, (), PolicyRules(mode=Mode.enforce), "p-1")
    now = T0 + timedelta(hours=1)  # nothing due yet
    with statements(store) as two:
        keep_decisions(decisions, watching(store, models[:2]), now)
    with statements(store) as eight:
        keep_decisions(decisions, watching(store, models), now)
    # one read of the states and one of the layers (four statements), whatever the models
    assert len(eight) == len(two) <= 5
    assert [q.tag for q in store.quarantines(models[5])] == ["bravo"]
    with statements(store) as ending:
        keep_decisions(decisions, watching(store, models), T0 + DAY + timedelta(minutes=1))
    assert store.quarantines(models[5]) == []  # released at its end, before any round
    assert [a.tag for a in store.audit(models[5], events=["release"])] == ["bravo"]
    assert all(store.audit(m, events=["release"]) == [] for m in models if m != models[5])
    assert len(ending) > len(eight)  # the ended one's own read and write came on top


def test_the_floor_is_recorded_for_the_one_model_among_many_whose_list_breaches_it(
    store: Store, model: str
) -> None:
    models = [f"{model}-{i}" for i in range(6)]
    for m in models:
        listed(store, m, "alpha", "bravo", "charlie")
    quarantined(store, models[2], "bravo")
    floors = {m: ModelSettings(id=m, capacity_floor=3 if m == models[2] else 2) for m in models}
    settings = Settings(database_url=store.url, models=tuple(floors.values()))
    decisions = ModelDecisions(store, (), PolicyRules(mode=Mode.enforce), "p-1")
    now = T0 + timedelta(hours=1)
    keep_decisions(decisions, settings, now)
    # a floor of 3 over three listed: bravo's quarantine is withheld, on that model only
    assert [q.withheld_at for q in store.quarantines(models[2])] == [now]
    assert [a.event for a in store.audit(models[2], events=["floor_held"])] == ["floor_held"]
    assert all(store.audit(m, events=["floor_held"]) == [] for m in models if m != models[2])
    with statements(store) as again:
        keep_decisions(decisions, settings, now + timedelta(minutes=1))
    assert len(again) <= 5  # recorded once: nothing left to write
    assert len(store.audit(models[2], events=["floor_held"])) == 1
