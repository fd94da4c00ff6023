"""Every failure is confirmed before it counts: the 2-of-3 rule, which probes re-check which
contract, and one endpoint's round judged from its first look and its re-checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from canary.config.probe_set import ProbeSet
from canary.core.contracts.confirm import NOT_CONFIRMED, Recheck, confirm, recheck_probes
from canary.core.contracts.endpoint import Judging, first_look, judge_endpoint
from canary.core.model import Contract, ContractResult, Observation, Result, ToolCall, Transport
from canary.text.detect import LanguageAnalyzer

Obs = Callable[..., Observation]
FAILED = ContractResult(Contract.schema, Result.fail, "not valid JSON", reason="invalid_json")
F, P, U = Result.fail, Result.passed, Result.inconclusive


@pytest.mark.parametrize(
    ("looks", "result"),
    [
        ([F, F], F),
        ([F, P], F),  # 2 of 3 looks fail
        ([P, F], F),
        ([P, P], P),  # 1 of 3: not confirmed
        ([P, U], U),
        ([U, U], U),
        ([F], F),
        ([P], U),
        ([], U),  # no re-check came back
    ],
)
def test_a_first_look_failure_fails_on_two_looks_of_three(
    looks: list[Result], result: Result
) -> None:
    judged = confirm(FAILED, [Recheck(r, r.value) for r in looks])
    assert judged.result is result
    assert judged.contract is Contract.schema and judged.reason == (
        NOT_CONFIRMED if result is P else "invalid_json"
    )


def test_confirmation_explains_itself() -> None:
    judged = confirm(FAILED, [Recheck(F, "not valid JSON"), Recheck(P, "valid")])
    assert judged.detail == (
        "not valid JSON; confirmed, 2/3 looks fail (re-checks: fail: not valid JSON; pass: valid)"
    )
    unconfirmed = confirm(FAILED, [Recheck(P, "valid"), Recheck(P, "valid")])
    assert unconfirmed.detail.startswith("not confirmed by the re-checks, 1/3 looks fail")


def test_a_passing_or_unsure_first_look_is_left_alone() -> None:
    for result in (P, U, Result.transport_error, Result.not_applicable):
        first = replace(FAILED, result=result)
        assert confirm(first, [Recheck(F, "x"), Recheck(F, "y")]) is first


def test_each_failing_contract_names_the_probe_that_rechecks_it() -> None:
    def failing(*contracts: Contract) -> list[ContractResult]:
        return [
            ContractResult(c, F if c in contracts else P, "")
            for c in (Contract.ttft, Contract.language, Contract.hygiene, Contract.schema)
        ]

    assert recheck_probes(failing()) == ()  # nothing failed: nothing more is sent
    assert recheck_probes(failing(Contract.schema)) == (Contract.schema,)
    assert recheck_probes(failing(Contract.hygiene)) == (Contract.language,)
    both = failing(Contract.language, Contract.hygiene, Contract.ttft)
    assert recheck_probes(both) == (Contract.ttft, Contract.language)  # one language pair


# -- one endpoint's round --------------------------------------------------------------------

GREETING = "Good evening, traveller, and welcome to the Silver Stag. Sit by the fire and rest."
STORY = (
    "The storm hammered the old lighthouse all night long. When the keeper opened the door, "
    "a stranger stood there with a lantern, soaked to the bone and shaking with cold."
)


@pytest.fixture(scope="module")
def analyzer() -> LanguageAnalyzer:
    return LanguageAnalyzer(["en", "es", "pt"])


@pytest.fixture
def judging(probe_set: ProbeSet, analyzer: LanguageAnalyzer) -> Judging:
    return Judging(
        language="en",
        analyze=analyzer.analyze,
        refusal_patterns=probe_set.refusal_patterns,
        schema=probe_set.schema,
        tool=probe_set.tool,
        ttft_threshold_s=10.0,
        max_tokens=400,
        schema_applicable=True,
        tools_applicable=True,
        tools_forced=True,
    )


BEAT = json.dumps({"character": "Ilsa", "mood": "tense", "intensity": 3, "line": "Name a price."})
CALL = ToolCall(
    0,
    "c1",
    "record_scene_change",
    json.dumps(
        {
            "location": "the ruined chapel",
            "time_of_day": "dawn",
            "characters": ["Mira", "Tobin"],
            "summary": "The party climbs out of the crypt.",
        }
    ),
)


def planned(obs: Obs, *, schema: str = BEAT) -> list[Observation]:
    """A healthy round: 3 ttft samples, refusal, language, schema and tools answers."""
    done = {"language": "en", "finish_reason": "stop"}
    return [
        *(obs(Contract.ttft, ttft_s=0.8, content=GREETING, attempt=a, **done) for a in (1, 2, 3)),
        obs(Contract.refusal, ttft_s=0.9, content=STORY, **done),
        obs(Contract.language, ttft_s=0.9, content=STORY, **done),
        obs(Contract.schema, ttft_s=0.5, content=schema, **done),
        obs(Contract.tools, ttft_s=0.5, tool_calls=(CALL,), language="en",
            finish_reason="tool_calls"),
    ]  # fmt: skip


def test_a_healthy_round_passes_and_asks_for_no_recheck(
    obs: Obs, probe_set: ProbeSet, judging: Judging
) -> None:
    looked = first_look(judging, planned(obs))
    assert [r.result for r in looked.results] == [P] * 6, [r.detail for r in looked.results]
    assert looked.recheck_probes() == ()
    assert judge_endpoint(judging, looked, []) == looked.results


def test_a_sporadic_broken_json_is_not_confirmed(
    obs: Obs, probe_set: ProbeSet, judging: Judging
) -> None:
    looked = first_look(judging, planned(obs, schema='{"character": "Mira",'))
    assert looked.recheck_probes() == (Contract.schema,)
    good = [obs(Contract.schema, content=BEAT, attempt=a) for a in (2, 3)]
    judged = {r.contract: r for r in judge_endpoint(judging, looked, good)}
    assert judged[Contract.schema].result is P and judged[Contract.schema].reason == NOT_CONFIRMED
    bad = [good[0], obs(Contract.schema, content="Sure! Here it is.", attempt=3)]
    judged = {r.contract: r for r in judge_endpoint(judging, looked, bad)}
    assert judged[Contract.schema].result is F


def test_stalls_fail_ttft_and_are_confirmed_by_stalled_rechecks(
    obs: Obs, probe_set: ProbeSet, judging: Judging
) -> None:
    def stall(contract: Contract, attempt: int = 1) -> Observation:
        return obs(contract, transport=Transport.timeout, status=200, ttft_s=30.0,
                   ttft_censored=True, attempt=attempt, language="en")  # fmt: skip

    round_ = planned(obs)
    round_[:3] = [stall(Contract.ttft, a) for a in (1, 2, 3)]
    looked = first_look(judging, round_)
    results = {r.contract: r for r in looked.results}
    assert results[Contract.ttft].result is F
    assert looked.recheck_probes() == (Contract.ttft,)
    judged = {r.contract: r for r in judge_endpoint(judging, looked, [stall(Contract.ttft, 4),
                                                                     stall(Contract.ttft, 5)])}  # fmt: skip
    assert judged[Contract.ttft].result is F
    assert "stalled, no token within 30 s" in judged[Contract.ttft].detail


def test_hygiene_is_rechecked_with_language_probes(
    obs: Obs, probe_set: ProbeSet, judging: Judging
) -> None:
    round_ = [
        replace(o, content=")" + o.content) if o.contract in (Contract.ttft,) else o
        for o in planned(obs)
    ]
    looked = first_look(judging, round_)
    assert {r.contract: r.result for r in looked.results}[Contract.hygiene] is F
    assert looked.recheck_probes() == (Contract.language,)
    rechecks = [obs(Contract.language, content=")" + STORY, attempt=a, language="en",
                    finish_reason="stop") for a in (2, 3)]  # fmt: skip
    judged = {r.contract: r for r in judge_endpoint(judging, looked, rechecks)}
    assert judged[Contract.hygiene].result is F
    assert judged[Contract.language].result is P  # its first look passed: left alone


def test_a_positive_controls_answers_are_never_language_or_hygiene_evidence(
    obs: Obs, probe_set: ProbeSet, judging: Judging
) -> None:
    """The control (host/fp8) writes stray-prefixed Spanish: by rule none of it is evidence,
    so its language and hygiene are inconclusive and nothing is re-checked for them; the other
    contracts are judged as usual, and a non-control endpoint's same answers still fail."""
    from canary.core.contracts.evidence import POSITIVE_CONTROL, is_prose_answer, prose_answers

    spanish = (
        "La tormenta golpeó el viejo faro durante toda la noche. Cuando el guardián abrió la "
        "puerta, un desconocido estaba allí con una linterna, empapado y temblando de frío."
    )
    round_ = [
        replace(o, content=")" + spanish) if o.contract in (Contract.ttft, Contract.refusal,
                                                             Contract.language) else o
        for o in planned(obs)
    ]  # fmt: skip
    control = replace(judging, controls=frozenset({"host/fp8"}))
    patterns = probe_set.refusal_patterns
    assert prose_answers(round_, patterns) and not prose_answers(round_, patterns, {"host/fp8"})
    assert not is_prose_answer(round_[0], patterns, {"host/fp8"})

    looked = first_look(control, round_)
    results = {r.contract: r for r in looked.results}
    for contract in (Contract.language, Contract.hygiene):
        assert (results[contract].result, results[contract].reason) == (U, POSITIVE_CONTROL)
    assert looked.recheck_probes() == ()
    assert results[Contract.ttft].result is P and results[Contract.schema].result is P

    other = replace(judging, controls=frozenset({"refuser"}))  # another host is the control
    judged = {r.contract: r.result for r in first_look(other, round_).results}
    assert judged[Contract.language] is F and judged[Contract.hygiene] is F
