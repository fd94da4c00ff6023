"""The equality check's rows: claimed once per slot, ended with its results and audit rows in
one transaction, each endpoint's latest result read back; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from canary.core.equality import EndpointEquality, Outcome
from canary.core.events import EqualityOutlier
from canary.store import AuditRows, Store

T0 = datetime(2026, 4, 1, tzinfo=UTC)
LOST = timedelta(hours=1)


def _claim(store: Store, model: str, holder: str, at: datetime) -> int | None:
    return store.claim_equality(model, T0, holder, {"level": 0.01}, at=at, lost_before=at - LOST)


def test_a_check_is_claimed_once_and_taken_over_when_its_runner_is_lost(
    store: Store, model: str
) -> None:
    first = _claim(store, model, "one", T0)
    assert first is not None
    assert _claim(store, model, "two", T0 + timedelta(minutes=5)) is None
    again = _claim(store, model, "two", T0 + LOST + timedelta(seconds=1))
    assert again == first
    assert not store.finish_equality(first, "one", [], at=T0)  # no longer its check
    assert store.finish_equality(first, "two", [], at=T0, status="skipped")
    assert _claim(store, model, "three", T0 + 3 * LOST) is None  # ended: never again


def test_results_and_their_audit_rows_are_written_with_the_end(store: Store, model: str) -> None:
    check = _claim(store, model, "one", T0)
    assert check is not None
    odd = EndpointEquality(
        "odd", Outcome.fail, p_value=0.0005, known_p_value=1.0, effect=0.2, peers=3,
        samples=200, reason="distribution", examples=("a b c",),
    )  # fmt: skip
    fine = EndpointEquality("fine", Outcome.passed, p_value=0.6, peers=3, samples=200)
    event = EqualityOutlier(model=model, tag="odd", check_id=check, p_value=0.0005, peers=3)
    at = T0 + timedelta(minutes=3)
    assert store.finish_equality(
        check, "one", [(odd, False), (fine, True)], at=at, cost_usd=0.01,
        audit=AuditRows([event], "canary", None),
    )  # fmt: skip
    latest = {r.tag: r for r in store.latest_equality([model])}
    assert latest["odd"].result == "fail" and latest["odd"].examples == ("a b c",)
    assert latest["odd"].pooled is False and latest["odd"].settings == {"level": 0.01}
    assert latest["fine"].result == "pass" and latest["fine"].at == at
    (row,) = store.audit(model=model, events=["equality_outlier"])
    assert row.tag == "odd" and row.detail["p_value"] == 0.0005
