"""Evidence per contract: sequence tests of the per-contract counts, recovery and pending language."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from core_builders import ENFORCE, INTERVAL, MODEL, T0, Fleet, cr, ids, kinds

from canary.core.model import (
    ALL_CONTRACTS,
    Contract,
    EndpointState,
    EventKind,
    Result,
    RoundVerdict,
    Verdict,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import expire_due
from canary.core.streaks import EVIDENCE_KEPT, causes_passed, evidence_kept, pending_language
from canary.core.verdict import aggregate

P, F, INC, T, NA = (
    Result.passed,
    Result.fail,
    Result.inconclusive,
    Result.transport_error,
    Result.not_applicable,
)


def results(tag: str, outcomes: Mapping[Contract, Result], **kw: str) -> RoundVerdict:
    """A round verdict aggregated from one result per named contract (others pass)."""
    rs = [cr(c, outcomes.get(c, P)) for c in (Contract.ttft, Contract.schema, Contract.refusal)]
    rs += [cr(c, r) for c, r in outcomes.items() if c not in (Contract.ttft, Contract.schema, Contract.refusal)]  # fmt: skip
    return aggregate(MODEL, tag, rs)


def test_two_different_contracts_failing_rounds_apart_are_not_a_streak() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F})})
    fleet.round({"a": results("a", {Contract.schema: T, Contract.ttft: T})})
    fleet.round({"a": results("a", {Contract.schema: T, Contract.ttft: T})})
    last = fleet.round({"a": results("a", {Contract.ttft: F, Contract.schema: T})})
    assert last.quarantines == ()
    state = fleet.state("a")
    assert state.streak(Contract.schema).count == 1 and state.streak(Contract.ttft).count == 1


def test_a_contract_that_passed_in_between_starts_again_whatever_the_others_did() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F})})
    for _ in range(4):  # the refusal probe is weak: inconclusive, but schema passes
        fleet.round({"a": results("a", {Contract.refusal: INC})})
    sixth = fleet.round({"a": results("a", {Contract.schema: F, Contract.refusal: INC})})
    assert sixth.quarantines == ()
    assert fleet.state("a").streak(Contract.schema).count == 1


def test_the_same_contract_failing_around_frozen_rounds_is_quarantined_with_its_causes() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F, Contract.ttft: F})})
    fleet.round({"a": results("a", {Contract.schema: T, Contract.ttft: INC})})
    third = fleet.round({"a": results("a", {Contract.schema: F, Contract.ttft: F})})
    [q] = third.quarantines
    assert q.causes == ("schema", "ttft") and ids(q.evidence) == (1, 3)
    assert q.reason.startswith("schema failed 2 rounds in a row")
    assert "ttft failed 2 rounds in a row" in q.reason
    assert fleet.state("a").causes == ("schema", "ttft")


def test_a_fail_older_than_the_max_age_starts_the_count_again() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F})})
    fleet.advance(timedelta(hours=6))  # the next fail is 6 h 30 min after the first
    second = fleet.round({"a": results("a", {Contract.schema: F})})
    assert second.quarantines == ()
    assert ids(fleet.state("a").streak(Contract.schema).evidence) == (2,)
    third = fleet.round({"a": results("a", {Contract.schema: F})})
    assert [q.tag for q in third.quarantines] == ["a"]


def test_a_fail_within_the_max_age_still_counts() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F})})
    fleet.advance(timedelta(hours=6) - INTERVAL)  # exactly 6 h between the two fails
    second = fleet.round({"a": results("a", {Contract.schema: F})})
    assert [q.tag for q in second.quarantines] == ["a"]


def test_an_old_count_is_dropped_even_in_a_round_without_evidence() -> None:
    fleet = Fleet()
    fleet.round({"a": results("a", {Contract.schema: F})})
    fleet.advance(timedelta(hours=7))
    fleet.round({"a": Verdict.transport_error})
    assert fleet.state("a").streaks == ()


def test_recovery_counts_rounds_where_every_cause_passed_though_others_were_unsure() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")  # schema is the cause
    unsure = results("a", {Contract.refusal: INC})  # refusal inconclusive: not "fully passing"
    assert unsure.verdict is Verdict.inconclusive
    fleet.round({"a": unsure})
    [release] = fleet.round({"a": unsure}).releases
    assert release.why == "recovered" and ids(release.evidence) == (3, 4)


def test_recovery_restarts_on_a_failure_of_any_contract() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    fleet.round({"a": results("a", {})})
    fleet.round({"a": results("a", {Contract.ttft: F})})
    assert fleet.state("a").recovery_streak == 0
    fleet.round({"a": results("a", {})})
    assert fleet.decisions[-1].releases == ()
    assert fleet.round({"a": results("a", {})}).releases != ()


def test_a_cause_that_becomes_not_applicable_runs_to_expiry() -> None:
    fleet = Fleet()
    fleet.run("a", "FF")
    for _ in range(4):
        assert fleet.round({"a": results("a", {Contract.schema: NA})}).releases == ()
    fleet.now = fleet.state("a").quarantined_until or fleet.now
    assert [r.why for r in fleet.round({"a": results("a", {})}).releases] == ["expired"]


def test_a_quarantine_from_before_causes_needs_every_contract_to_pass() -> None:
    assert not causes_passed((ALL_CONTRACTS,), results("a", {Contract.refusal: INC}))
    assert causes_passed((ALL_CONTRACTS,), results("a", {}))
    assert causes_passed(("schema",), results("a", {Contract.refusal: INC}))
    assert not causes_passed(("schema", "ttft"), results("a", {Contract.ttft: T}))


def test_would_quarantine_fires_once_per_contract_streak() -> None:
    fleet = Fleet(rules=PolicyRules())
    decisions = [
        fleet.round({"a": results("a", {Contract.schema: F})}),
        fleet.round({"a": results("a", {Contract.schema: F})}),
        fleet.round({"a": results("a", {Contract.schema: F, Contract.ttft: F})}),
        fleet.round({"a": results("a", {Contract.schema: F, Contract.ttft: F})}),
        fleet.round({"a": results("a", {Contract.schema: F})}),
    ]
    would = [kinds(d, EventKind.would_quarantine) for d in decisions]
    assert [[e.detail["causes"] for e in w] for w in would] == [
        [], [["schema"]], [], [["ttft"]], []
    ]  # fmt: skip


def _anomaly(language: str | None, result: Result) -> RoundVerdict:
    return RoundVerdict(
        MODEL,
        "a",
        Verdict.inconclusive,
        (cr(Contract.language, result, language="pt", anomaly=language is not None),),
        language_anomaly_in=language,
    )


def test_a_pending_language_survives_inconclusive_repeats_for_the_max_age() -> None:
    state = EndpointState(MODEL, "a")
    max_age = ENFORCE.streak_max_age
    lang, since = pending_language(state, _anomaly("pt", INC), T0, max_age)
    assert (lang, since) == ("pt", T0)
    state = EndpointState(MODEL, "a", next_language=lang, next_language_since=since)
    repeat = _anomaly(None, INC)  # the repeat was inconclusive: keep repeating pt
    assert pending_language(state, repeat, T0 + timedelta(hours=6), max_age) == ("pt", T0)
    assert pending_language(state, repeat, T0 + timedelta(hours=6, seconds=1), max_age) == (
        None, None)  # fmt: skip
    assert pending_language(state, _anomaly(None, P), T0 + INTERVAL, max_age) == (None, None)
    assert pending_language(state, None, T0 + INTERVAL, max_age) == ("pt", T0)


def test_a_long_streak_keeps_only_its_latest_round_ids() -> None:
    fleet = Fleet(("a", "b"), floor=2)  # the floor holds a: it keeps failing, never quarantined
    for _ in range(30):
        fleet.round({"a": results("a", {Contract.schema: F})})
    streak = fleet.state("a").streak(Contract.schema)
    assert streak.count == 30 and ids(streak.evidence) == tuple(range(21, 31))


def test_a_threshold_above_ten_keeps_as_many_round_ids_as_it_needs() -> None:
    rules = PolicyRules(mode=ENFORCE.mode, failing_rounds=12)
    assert evidence_kept(rules.failing_rounds) == 12 and evidence_kept(2) == EVIDENCE_KEPT == 10
    fleet = Fleet(("a", "b", "c"), rules=rules)
    decisions = [fleet.round({"a": results("a", {Contract.schema: F})}) for _ in range(12)]
    [q] = decisions[-1].quarantines
    assert ids(q.evidence) == tuple(range(1, 13))


def test_housekeeping_drops_a_pending_language_older_than_the_max_age() -> None:
    max_age = ENFORCE.streak_max_age
    pending = EndpointState(MODEL, "a", next_language="pt", next_language_since=T0)
    fresh = EndpointState(MODEL, "b", next_language="pt", next_language_since=T0 + INTERVAL)
    states = {"a": pending, "b": fresh}
    changed, ends, events = expire_due(states, T0 + max_age + INTERVAL / 2, max_age)
    assert ends == () and events == ()
    assert set(changed) == {"a"} and changed["a"].next_language is None
    assert changed["a"].next_language_since is None
    assert expire_due(states, T0 + max_age + INTERVAL / 2) == ({}, (), ())  # no max age given
