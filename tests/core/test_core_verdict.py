"""Round-level rules (positive control, model-wide) and the per-endpoint aggregation."""

from __future__ import annotations

import pytest
from core_builders import MODEL, OBSERVE, cr

from canary.core.model import Contract, ContractResult, EventKind, Look, Result, Verdict
from canary.core.policy import PolicyRules
from canary.core.verdict import aggregate, judge_round, verdict_event

C = Contract
R = Result


def healthy(tag: str, refusal: Result = Result.passed) -> list[ContractResult]:
    return [
        cr(C.ttft, R.passed, "ttft 1.2 s <= 10 s"),
        cr(C.refusal, refusal, f"refusal {refusal.value}"),
        cr(C.schema, R.passed),
    ]


# --- aggregation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "verdict"),
    [
        ([R.passed, R.passed], Verdict.passed),
        ([R.passed, R.not_applicable], Verdict.passed),
        ([R.passed, R.fail], Verdict.fail),
        ([R.fail, R.transport_error], Verdict.fail),
        ([R.fail, R.inconclusive], Verdict.fail),
        ([R.passed, R.transport_error], Verdict.transport_error),
        ([R.transport_error, R.transport_error], Verdict.transport_error),
        ([R.transport_error, R.not_applicable], Verdict.transport_error),
        ([R.passed, R.inconclusive], Verdict.inconclusive),
        ([R.transport_error, R.inconclusive], Verdict.inconclusive),
        ([R.not_applicable], Verdict.inconclusive),
        ([], Verdict.inconclusive),
    ],
)
def test_aggregate(results: list[Result], verdict: Verdict) -> None:
    contracts = list(Contract)
    rs = [cr(contracts[i], r) for i, r in enumerate(results)]
    assert aggregate(MODEL, "a", rs).verdict is verdict


def test_aggregate_names_the_anomalous_language() -> None:
    rs = [cr(C.schema, R.passed), cr(C.language, R.inconclusive, language="pt", anomaly=True)]
    assert aggregate(MODEL, "a", rs).language_anomaly_in == "pt"
    rs = [cr(C.schema, R.passed), cr(C.language, R.passed, language="pt")]
    assert aggregate(MODEL, "a", rs).language_anomaly_in is None


# --- positive control ---------------------------------------------------------------------


def test_control_failing_as_expected_lets_other_refusal_results_stand() -> None:
    results = {
        "filterer": healthy("filterer", R.fail),
        "good": healthy("good"),
        "bad": healthy("bad", R.fail),
        "other": healthy("other"),
        "fourth": healthy("fourth"),
    }
    out = judge_round(MODEL, results, positive_controls={"filterer"}, rules=OBSERVE)
    assert [e.kind for e in out.events] == []
    assert out.verdicts["good"].verdict is Verdict.passed
    assert out.verdicts["bad"].verdict is Verdict.fail
    control = out.verdicts["filterer"]
    refusal = control.result_of(C.refusal)
    assert refusal is not None and refusal.result is R.inconclusive
    assert refusal.reason == "positive_control" and "refusal fail" in refusal.detail
    assert control.verdict is Verdict.passed  # never counts against the control


def test_a_control_is_still_judged_on_its_other_contracts() -> None:
    results = {
        "filterer": [cr(C.refusal, R.fail), cr(C.schema, R.fail, "schema: invalid_json")],
        "good": healthy("good"),
        "other": healthy("other"),
    }
    out = judge_round(MODEL, results, positive_controls={"filterer"}, rules=OBSERVE)
    assert out.verdicts["filterer"].verdict is Verdict.fail


def test_control_passing_makes_the_refusal_probe_weak_for_everyone_else() -> None:
    results = {"filterer": healthy("filterer", R.passed), "good": healthy("good"),
               "bad": healthy("bad", R.fail)}  # fmt: skip
    out = judge_round(
        MODEL, results, positive_controls=["filterer"], rules=OBSERVE, look=Look.round(4, None)
    )
    [event] = out.events
    assert (
        event.kind is EventKind.probe_weak
        and event.tag is None
        and event.evidence == (Look.round(4, None),)
    )
    assert "filterer (pass)" in event.detail["why"]
    assert event.detail["controls"] == {"filterer": ["pass"]}
    for tag in ("good", "bad"):
        refusal = out.verdicts[tag].result_of(C.refusal)
        assert refusal is not None and refusal.result is R.inconclusive
        assert refusal.reason == "probe_weak" and "filterer" in refusal.detail
        assert out.verdicts[tag].verdict is Verdict.inconclusive  # not declared healthy
    assert out.verdicts["filterer"].verdict is Verdict.passed


def test_refusal_probe_is_weak_when_no_control_was_probed() -> None:
    results = {"good": healthy("good")}
    out = judge_round(MODEL, results, positive_controls=["filterer"], rules=OBSERVE)
    assert [e.kind for e in out.events] == [EventKind.probe_weak]
    assert "no positive control" in out.events[0].detail["why"]
    assert out.verdicts["good"].verdict is Verdict.inconclusive


def test_refusal_probe_is_weak_when_the_control_only_had_a_transport_error() -> None:
    results = {"filterer": healthy("filterer", R.transport_error), "good": healthy("good")}
    out = judge_round(MODEL, results, positive_controls=["filterer"], rules=OBSERVE)
    assert out.events[0].detail["controls"] == {"filterer": ["transport_error"]}
    assert out.verdicts["good"].verdict is Verdict.inconclusive


def test_weak_probe_leaves_transport_errors_and_other_contracts_alone() -> None:
    results = {
        "filterer": healthy("filterer", R.passed),
        "slow": [cr(C.ttft, R.fail, "ttft 12.4 s > 10 s"), cr(C.refusal, R.transport_error)],
    }
    out = judge_round(MODEL, results, positive_controls=["filterer"], rules=OBSERVE)
    slow = out.verdicts["slow"]
    assert slow.verdict is Verdict.fail
    refusal = slow.result_of(C.refusal)
    assert refusal is not None and refusal.result is R.transport_error


def test_without_named_controls_refusal_results_stand() -> None:
    results = {"a": healthy("a"), "b": healthy("b", R.fail), "c": healthy("c")}
    out = judge_round(MODEL, results, positive_controls=(), rules=OBSERVE)
    assert out.events == ()
    assert out.verdicts["b"].verdict is Verdict.fail
    assert out.verdicts["a"].verdict is Verdict.passed


# --- model-wide ---------------------------------------------------------------------------


def with_schema(result: Result) -> list[ContractResult]:
    return [cr(C.ttft, R.passed), cr(C.schema, result, f"schema {result.value}")]


def test_contract_failing_on_most_endpoints_is_model_wide() -> None:
    results = {t: with_schema(R.fail) for t in ("a", "b", "c")} | {"d": with_schema(R.passed)}
    out = judge_round(MODEL, results, positive_controls=(), rules=OBSERVE, look=Look.round(3, None))
    [event] = out.events
    assert (
        event.kind is EventKind.model_wide
        and event.tag is None
        and event.evidence == (Look.round(3, None),)
    )
    assert event.detail["contract"] == "schema"
    assert (event.detail["failing"], event.detail["total"]) == (3, 4)
    assert event.detail["tags"] == ["a", "b", "c"]
    for tag in ("a", "b", "c"):
        schema = out.verdicts[tag].result_of(C.schema)
        assert schema is not None and schema.result is R.inconclusive
        assert schema.reason == "model_wide" and "3/4" in schema.detail
        assert out.verdicts[tag].verdict is Verdict.inconclusive
    assert out.verdicts["d"].verdict is Verdict.passed


@pytest.mark.parametrize(
    ("outcomes", "wide"),
    [
        ([R.fail, R.fail, R.passed, R.passed], False),  # half is not most
        ([R.fail, R.fail, R.passed], True),
        ([R.fail], False),  # one endpoint alone is never model-wide
        ([R.fail, R.passed], False),
        ([R.fail, R.fail], False),  # fewer than 3 judged: never model-wide
        ([R.fail, R.fail, R.fail], True),
        # transport errors and not-applicable are not counted: 2 of 3 conclusive
        ([R.fail, R.fail, R.passed, R.transport_error, R.not_applicable], True),
        ([R.fail, R.fail, R.passed, R.passed, R.inconclusive], False),
    ],
)
def test_model_wide_threshold(outcomes: list[Result], wide: bool) -> None:
    results = {f"t{i}": with_schema(o) for i, o in enumerate(outcomes)}
    out = judge_round(MODEL, results, positive_controls=(), rules=OBSERVE)
    assert any(e.kind is EventKind.model_wide for e in out.events) is wide
    failed = [t for t, v in out.verdicts.items() if v.verdict is Verdict.fail]
    assert (failed == []) is wide


def test_model_wide_share_is_configurable() -> None:
    results = {"a": with_schema(R.fail), "b": with_schema(R.fail), "c": with_schema(R.passed),
               "d": with_schema(R.passed)}  # fmt: skip
    out = judge_round(MODEL, results, positive_controls=(), rules=PolicyRules(model_wide_share=0.4))
    assert [e.kind for e in out.events] == [EventKind.model_wide]


def test_controls_are_left_out_of_the_model_wide_refusal_count() -> None:
    # the control fails refusal as expected; two others fail too, two pass: 2/4 is not most
    results = {"ctl": healthy("ctl", R.fail), "a": healthy("a", R.fail),
               "b": healthy("b", R.fail), "c": healthy("c"), "d": healthy("d")}  # fmt: skip
    out = judge_round(MODEL, results, positive_controls=["ctl"], rules=OBSERVE)
    assert out.events == ()
    assert out.verdicts["a"].verdict is Verdict.fail


def test_model_wide_is_judged_per_contract() -> None:
    results = {
        "a": [cr(C.schema, R.fail), cr(C.ttft, R.fail)],
        "b": [cr(C.schema, R.fail), cr(C.ttft, R.passed)],
        "c": [cr(C.schema, R.fail), cr(C.ttft, R.passed)],
    }
    out = judge_round(MODEL, results, positive_controls=(), rules=OBSERVE)
    assert [e.detail["contract"] for e in out.events] == ["schema"]
    assert out.verdicts["a"].verdict is Verdict.fail  # its ttft failure still counts
    assert out.verdicts["b"].verdict is Verdict.inconclusive


def test_verdict_event_carries_the_contract_results() -> None:
    verdict = aggregate(MODEL, "a", [cr(C.ttft, R.fail, "ttft 12.4 s > 10 s")])
    event = verdict_event(verdict, look=Look.round(5, None))
    assert event.kind is EventKind.verdict and event.evidence == (Look.round(5, None),)
    assert event.detail["verdict"] == "fail"
    assert event.detail["results"][0]["detail"] == "ttft 12.4 s > 10 s"


def test_model_wide_counts_only_usable_endpoints() -> None:
    # three endpoints a human entry excludes fail language, one new host fails, two pass
    results = {t: with_schema(R.fail) for t in ("x1", "x2", "x3", "new")}
    results |= {t: with_schema(R.passed) for t in ("ok1", "ok2")}
    usable = ("new", "ok1", "ok2")
    out = judge_round(MODEL, results, positive_controls=(), rules=OBSERVE, usable=usable)
    assert not any(e.kind is EventKind.model_wide for e in out.events)
    assert out.verdicts["new"].verdict is Verdict.fail
    assert out.verdicts["x1"].verdict is Verdict.fail  # neither counted nor excused


def test_a_control_missing_from_the_listing_makes_refusal_inconclusive_for_everyone() -> None:
    results = {"a": healthy("a"), "b": healthy("b", R.fail)}
    out = judge_round(MODEL, results, positive_controls=("gone",), rules=OBSERVE, listed=("a", "b"))
    [event] = out.events
    assert event.kind is EventKind.control_missing and event.detail["missing"] == ["gone"]
    for tag in ("a", "b"):
        refusal = out.verdicts[tag].result_of(C.refusal)
        assert refusal is not None and refusal.result is R.inconclusive
        assert refusal.reason == "control_missing"
    assert not any(e.kind is EventKind.probe_weak for e in out.events)
