"""The store's part of reports: one report per generation id, focused-check claims one per
(model, contract) per gap whatever the number of replicas, published documents by time."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quick import examples

from canary.store._reports import NewReport, ReportRow
from canary.store.repository import Store
from canary.store.rows import NewDocument

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
GAP = timedelta(minutes=10)
_models = itertools.count()


def _report(generation_id: str | None, **fields: object) -> NewReport:
    base = dict(
        at=T0, model="acme/r", provider="alpha", tags=("alpha",), generation_id=generation_id,
        symptom="empty", contracts=("refusal",), language=None, note="n", sender="app",
        outcome="pending", received_at=T0,
    )  # fmt: skip
    return NewReport(**{**base, **fields})  # type: ignore[arg-type]


def test_one_report_per_generation_id_and_none_without_one(store: Store) -> None:
    first, made = store.add_report(_report("gen-s-1"))
    again, made_again = store.add_report(_report("gen-s-1", symptom="refusal"))
    assert made and not made_again and again == first
    nameless = [store.add_report(_report(None))[1] for _ in range(2)]
    assert nameless == [True, True]


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=20))
def test_claims_are_at_least_the_gap_apart(store: Store, minutes: list[int]) -> None:
    model = f"acme/claims-{next(_models)}"
    granted = [
        T0 + timedelta(minutes=m)
        for m in sorted(minutes)
        if store.claim_focused(model, "refusal", T0 + timedelta(minutes=m), GAP)
    ]
    assert granted[0] == T0 + timedelta(minutes=min(minutes))
    assert all(b - a >= GAP for a, b in zip(granted, granted[1:], strict=False))


def test_replicas_claiming_at_once_get_one_check(store: Store) -> None:
    model = f"acme/claims-{next(_models)}"
    with ThreadPoolExecutor(6) as pool:
        won = list(pool.map(lambda _: store.claim_focused(model, "ttft", T0, GAP), range(6)))
        later = list(
            pool.map(lambda _: store.claim_focused(model, "ttft", T0 + GAP, GAP), range(6))
        )
    assert won.count(True) == 1 and later.count(True) == 1
    assert store.claim_focused(model, "schema", T0, GAP)  # another contract: its own claim


def test_documents_are_recorded_when_their_etag_changes_and_read_by_time(store: Store) -> None:
    model = f"acme/docs-{next(_models)}"
    assert store.record_documents([NewDocument(model, "", "W/1", {"ignore": []})], T0)
    assert not store.record_documents([NewDocument(model, "", "W/1", {"ignore": []})], T0 + GAP)
    assert store.record_documents(
        [NewDocument(model, "", "W/2", {"ignore": ["bravo"]})], T0 + 2 * GAP
    )
    assert store.document_at(model, "", T0 - GAP) is None
    assert store.document_at(model, "", T0 + GAP).etag == "W/1"  # type: ignore[union-attr]
    assert store.document_at(model, "", T0 + 3 * GAP).body == {"ignore": ["bravo"]}  # type: ignore[union-attr]


def test_a_check_settles_the_pending_reports_it_answers_once(store: Store) -> None:
    model = f"acme/settle-{next(_models)}"
    old, _ = store.add_report(_report(None, model=model, at=T0 - 7 * GAP, received_at=T0 - 7 * GAP))
    ids = [store.add_report(_report(None, model=model, tags=(t,)))[0].id for t in "abcd"]
    done, _ = store.add_report(_report(None, model=model, outcome="rate_limited"))

    def answer(r: ReportRow) -> str | None:
        return None if r.tags == ("d",) else "confirmed"

    with ThreadPoolExecutor(4) as pool:  # checks of four replicas ending at once
        settled = list(
            pool.map(lambda c: store.settle_pending(model, T0 - GAP, answer, check=c, at=T0),
                     range(4))
        )  # fmt: skip
    assert sorted(i for s in settled for i in s) == ids[:3]  # each by one check only
    after = {r.id: r for r in store.reports(model=model)}
    for i in ids[:3]:
        assert after[i].outcome == "confirmed" and len(after[i].checks) == 1
        assert after[i].decided_at == T0
    assert after[ids[3]].outcome == "pending" and after[ids[3]].checks == ()  # not answered
    assert after[old.id].outcome == "pending"  # before ``since``
    assert after[done.id].outcome == "rate_limited" and after[done.id].checks == ()


def test_retention_prunes_every_variant_s_history_but_its_latest(store: Store) -> None:
    model, day = f"acme/docs-{next(_models)}", timedelta(days=1)
    for variant, etag, days in (("", "W/1", 30), ("", "W/2", 20), ("profile=json", "W/a", 30),
                                ("profile=json", "W/b", 25), ("profile=json", "W/c", 5),
                                ("profile=batch&needs=tools", "W/x", 30)):  # fmt: skip
        assert store.record_documents(
            [NewDocument(model, variant, etag, {"ignore": [etag]})], T0 - days * day
        )
    pruned = store.prune_before(T0 - 10 * day)
    assert pruned.published_documents == 3
    kept = {
        (v, at): getattr(store.document_at(model, v, T0 - at * day), "etag", None)
        for v in ("", "profile=json", "profile=batch&needs=tools")
        for at in (26, 0)
    }
    assert kept == {
        ("", 26): None, ("", 0): "W/2",  # the latest stays, however old: published now
        ("profile=json", 26): None, ("profile=json", 0): "W/c",
        ("profile=batch&needs=tools", 26): "W/x", ("profile=batch&needs=tools", 0): "W/x",
    }  # fmt: skip
