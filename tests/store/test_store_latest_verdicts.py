"""Each endpoint's latest judged round read from latest_verdicts is the one a walk of
round_verdicts finds, whatever rounds were judged, abandoned or pruned (by retention, which
points them again, or behind its back): a property searched by hypothesis, on SQLite and
PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from builders import passed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quick import examples
from sqlalchemy import delete, func, select

from canary.store import Store
from canary.store import tables as t
from canary.store.latest_verdicts import (
    fill_latest_verdicts,
    latest_judged_rounds,
    walk_latest_judged_rounds,
)

T0 = datetime(2026, 7, 1, tzinfo=UTC)
TAGS = ("alpha", "beta", "gamma")
RUN = itertools.count()

JUDGE = st.tuples(
    st.just("judge"),
    st.sets(st.sampled_from(TAGS), min_size=1),
    st.sampled_from(["finished", "abandoned", "running"]),
)
PRUNE = st.tuples(st.just("prune"), st.integers(0, 8))  # retention's delete of a round's rows
RETAIN = st.tuples(st.just("retain"), st.integers(0, 8))  # retention up to that slot
LEGACY = st.tuples(st.just("legacy"))  # as if written before latest_verdicts: then migrated


def _pointers(store: Store, model: str) -> dict[str, int]:
    latest = t.latest_verdicts.c
    with store.engine.connect() as conn:
        rows = conn.execute(select(latest.tag, latest.round_id).where(latest.model == model))
        return {tag: rid for tag, rid in rows}


def _largest_verdicts(store: Store, model: str) -> dict[str, int]:
    v = t.round_verdicts.c
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(v.tag, func.max(v.round_id)).where(v.model == model).group_by(v.tag)
        )
        return {tag: rid for tag, rid in rows}


def _latest(store: Store, model: str) -> tuple[dict[tuple[str, str], int], ...]:
    with store._read() as conn:
        return latest_judged_rounds(conn, [model]), walk_latest_judged_rounds(conn, [model])


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.one_of(JUDGE, PRUNE, RETAIN, LEGACY), max_size=8))
def test_latest_judged_rounds_match_a_walk_of_the_verdicts(
    store: Store, steps: list[tuple[object, ...]]
) -> None:
    model = f"acme/latest-{next(RUN)}"
    rounds: list[int] = []
    behind_its_back = False  # verdicts deleted other than by retention
    for i, step in enumerate(steps):
        if step[0] == "judge":
            _, tags, status = step
            slot = T0 + timedelta(minutes=30 * i)
            rid = store.claim_round(model, slot, "me", "p-1", {}, started_at=slot)
            assert rid is not None
            store.record_verdicts(rid, model, passed(model, tags))  # type: ignore[arg-type]
            if status != "running":
                store.finish_round(rid, str(status), at=slot)
            rounds.append(rid)
        elif step[0] == "prune" and rounds:
            behind_its_back = True
            gone = rounds[int(step[1]) % len(rounds)]  # type: ignore[call-overload]
            with store.engine.begin() as conn:
                conn.execute(
                    delete(t.contract_results).where(t.contract_results.c.round_id == gone)
                )
                conn.execute(delete(t.round_verdicts).where(t.round_verdicts.c.round_id == gone))
        elif step[0] == "retain":
            store.prune_before(T0 + timedelta(minutes=30 * int(step[1])))  # type: ignore[call-overload]
            if not behind_its_back:  # then every pointer is exact: no model needs a walk
                assert _pointers(store, model) == _largest_verdicts(store, model)
        elif step[0] == "legacy":
            with store.engine.begin() as conn:
                conn.execute(delete(t.latest_verdicts).where(t.latest_verdicts.c.model == model))
            pointed, walked = _latest(store, model)  # no row for the model: walked
            assert pointed == walked
            with store.engine.begin() as conn:
                fill_latest_verdicts(conn, model)  # what migration 0010 does
        pointed, walked = _latest(store, model)
        assert pointed == walked


def test_the_latest_round_is_read_from_one_row_per_endpoint(store: Store, model: str) -> None:
    """The pointers are what the reads use: one that names a later round wins over the walk."""
    rids = []
    for i in range(2):
        slot = T0 + timedelta(minutes=30 * i)
        rid = store.claim_round(model, slot, "me", "p-1", {}, started_at=slot)
        assert rid is not None
        store.record_verdicts(rid, model, passed(model, {"alpha"}))
        store.finish_round(rid, "finished", at=slot)
        rids.append(rid)
    with store.engine.begin() as conn:
        rows = conn.execute(t.latest_verdicts.select().where(t.latest_verdicts.c.model == model))
        assert [(row.tag, row.round_id) for row in rows] == [("alpha", rids[1])]
    # a zombie attempt writing an older round's verdicts late does not move it back
    store.record_verdicts(rids[0], model, passed(model, {"alpha"}))
    assert _latest(store, model)[0] == {(model, "alpha"): rids[1]}
