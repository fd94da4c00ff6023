"""canary.core.reports: symptoms to contracts, attribution by name, rate limits, and what a
focused check may count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from builders import result, verdict

from canary.core.model import (
    Contract,
    EndpointState,
    Look,
    LookKind,
    Result,
    Streak,
    Verdict,
)
from canary.core.reports import (
    Outcome,
    Symptom,
    admission,
    contracts_of,
    endpoints_named,
    failures_only,
    focus_order,
    joins,
    report_outcome,
    retry_after,
    second_looks,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
GAP = timedelta(minutes=10)


def test_every_symptom_names_its_contracts() -> None:
    assert contracts_of(Symptom.slow_first_token) == (Contract.ttft,)
    for s in ("refusal", "empty", "filtered", "cut_short"):
        assert contracts_of(Symptom(s)) == (Contract.refusal,)
    assert contracts_of(Symptom.broken_json) == (Contract.schema,)
    for s in ("wrong_language", "mixed_language", "garbled_text"):
        assert contracts_of(Symptom(s)) == (Contract.language,)
    assert contracts_of(Symptom.stray_tokens) == contracts_of(Symptom.repetition)
    assert contracts_of(Symptom.bad_tool_call) == (Contract.tools,)
    assert set(contracts_of(Symptom.other)) == set(Contract)


def test_a_name_may_match_several_endpoints_and_never_a_guess() -> None:
    listing = {"deepinfra": "DeepInfra", "deepinfra/fp8": "DeepInfra", "together": "Together"}
    assert endpoints_named("deepinfra", listing) == ("deepinfra", "deepinfra/fp8")
    assert endpoints_named("DeepInfra", listing) == ("deepinfra", "deepinfra/fp8")
    assert endpoints_named("deepinfra/fp8", listing) == ("deepinfra/fp8",)
    assert endpoints_named("deep", listing) == ()


def test_retry_after_counts_the_window_only() -> None:
    window = timedelta(minutes=1)
    recent = [NOW - timedelta(seconds=s) for s in (70, 50, 10)]
    assert retry_after(recent, NOW, 3, window) is None
    assert retry_after(recent, NOW, 2, window) == 10.0  # the one 50 s ago leaves in 10 s


def test_a_focused_check_counts_its_failures_only() -> None:
    v = verdict(
        "m", "a", Verdict.fail,
        result(Contract.hygiene, Result.fail), result(Contract.ttft, Result.fail),
        result(Contract.refusal, Result.passed), language_anomaly_in="pt",
    )  # fmt: skip
    only = failures_only(v, {"hygiene", "refusal"})
    assert [r.contract for r in only.results] == [Contract.hygiene]
    assert only.verdict is Verdict.fail and only.language_anomaly_in is None
    clean = failures_only(verdict("m", "a"), {"ttft"})
    assert clean.results == () and clean.verdict is Verdict.inconclusive


def test_report_outcomes() -> None:
    failing = {"a": verdict("m", "a", Verdict.fail, result(Contract.hygiene, Result.fail))}
    assert report_outcome(["a"], ["hygiene"], failing, ()) is Outcome.confirmed
    assert report_outcome(["b"], ["hygiene"], failing, ()) is Outcome.not_confirmed
    assert report_outcome(["b"], ["hygiene"], failing, ["hygiene"]) is Outcome.model_wide
    # every reported endpoint left unprobed for the budget: over budget, whatever the rest says
    assert report_outcome(["b"], ["hygiene"], failing, ["hygiene"], ["b"]) is Outcome.over_budget
    assert report_outcome(["a", "b"], ["hygiene"], failing, (), ["b"]) is Outcome.confirmed


def test_a_focused_first_look_is_due_a_second_after_the_gap() -> None:
    focused = Look(LookKind.focused, 7, NOW - GAP)
    state = EndpointState("m", "a", streaks=(Streak(Contract.ttft, 1, focused.at, (focused,)),))
    assert second_looks([state], NOW, GAP) == {Contract.ttft: ("a",)}
    assert second_looks([state], NOW - timedelta(seconds=1), GAP) == {}
    by_round = EndpointState(
        "m", "b", streaks=(Streak(Contract.ttft, 1, NOW, (Look.round(3, NOW - GAP),)),)
    )
    assert second_looks([by_round], NOW, GAP) == {}


def test_the_reported_endpoints_are_probed_first() -> None:
    assert focus_order(["c"], ["a", "c", "b"]) == ["c", "a", "b"]


def test_admission_limits_then_maintenance_then_a_check() -> None:
    recent = [NOW - timedelta(seconds=s) for s in (10, 20)]
    limited = admission(["alpha"], recent, NOW, 2, timedelta(minutes=1), ())
    assert limited[0] is Outcome.rate_limited and limited[1] == 40.0
    assert admission(["alpha"], recent, NOW, 3, timedelta(minutes=1), ["alpha"]) == (
        Outcome.in_maintenance, None,
    )  # fmt: skip
    both = ["deepinfra", "deepinfra/fp8"]  # in maintenance only when every one is
    assert admission(both, [], NOW, 3, timedelta(minutes=1), ["deepinfra"])[0] is Outcome.pending
    assert admission(both, [], NOW, 3, timedelta(minutes=1), both)[0] is Outcome.in_maintenance
    assert admission([], recent, NOW, 1, timedelta(minutes=1), ())[0] is Outcome.pending


def test_a_report_joins_a_check_that_looked_at_its_endpoints_for_its_contracts() -> None:
    looked = {"alpha", "bravo", "control"}
    assert joins(["alpha"], ["schema"], {"schema"}, looked)
    assert joins(["alpha"], [c.value for c in Contract], {"schema"}, looked)  # other
    assert not joins(["alpha"], ["ttft"], {"schema"}, looked)  # another contract
    assert not joins(["alpha", "zulu"], ["schema"], {"schema"}, looked)  # zulu not looked at
    assert not joins([], ["schema"], {"schema"}, looked)  # not attributed (yet)
