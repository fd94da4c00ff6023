"""Issue 3 and 8 "Done when", end to end: every simulator fault kind, sent through the real
OpenRouter client and the real Prober (real probe definitions, real lingua), is judged as the
contract it breaks; transport faults give transport_error, a wrong provider gives an invalid probe,
healthy endpoints pass, endpoints without tools/structured outputs give not_applicable, and the
positive-control rule works both ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from e2e_helpers import probe_pass, probe_set, provider

from canary.config.probe_set import ProbeSet
from canary.core.model import Contract, ContractResult, Result, Verdict
from canary.core.policy import PolicyRules
from canary.core.verdict import aggregate, judge_round
from canary.rounds.prober import EndpointProbing
from canary.sim.server import RunningSimulator, start_simulator
from canary.text.detect import LanguageAnalyzer

MODEL = "acme/e2e-faults"
LANGUAGES = ["en", "pt", "es"]
# Far above a healthy answer's few milliseconds, even on a loaded machine; below the slow ones.
TTFT_THRESHOLD_S = 0.6
SHORT_DEADLINES = {"first_token_timeout_s": 0.7, "stream_timeout_s": 1.0}


@dataclass(frozen=True)
class Case:
    """One fault on one endpoint and the contract result it must produce."""

    tag: str
    faults: tuple[dict[str, Any], ...]
    contract: Contract | None  # None: every applicable contract (transport faults, served_by)
    result: Result
    reason: str | tuple[str, ...] | None  # a tuple: any of these
    language: str = "en"
    client: dict[str, float] = field(default_factory=dict)


QUALITY = [
    Case("slow", ({"kind": "slow_first_token", "ttft_ms": 1000},), Contract.ttft, Result.fail,
         "slow"),
    Case("garbage", ({"kind": "garbage_prefix"},), Contract.hygiene, Result.fail,
         "leading_garbage"),
    Case("refuser", ({"kind": "refusal"},), Contract.refusal, Result.fail, "refusal_pattern"),
    Case("filtered", ({"kind": "content_filter"},), Contract.refusal, Result.fail,
         "content_filter"),
    Case("empty", ({"kind": "empty"},), Contract.refusal, Result.fail, "empty"),
    Case("truncate", ({"kind": "truncate"},), Contract.refusal, Result.fail, "truncated"),
    Case("prose", ({"kind": "schema_break", "how": "prose"},), Contract.schema, Result.fail,
         "invalid_json"),
    Case("missing-field", ({"kind": "schema_break", "how": "missing_field"},), Contract.schema,
         Result.fail, "schema_mismatch"),
    Case("invalid-json", ({"kind": "schema_break", "how": "invalid_json"},), Contract.schema,
         Result.fail, "invalid_json"),
    # an answer wholly in es: a switch when two labelled sentences in a row are es, the wrong
    # language when the detector is sure of one sentence only (the others too short to label)
    Case("drift", ({"kind": "language_drift", "to": "es"},), Contract.language, Result.fail,
         ("language_switch", "wrong_language")),
    Case("mix", ({"kind": "language_mix", "with": "es", "share": 0.5},), Contract.language,
         Result.fail, None, language="pt"),
    Case("mojibake", ({"kind": "mojibake"},), Contract.language, Result.fail,
         "encoding_corruption"),
    Case("repetition", ({"kind": "repetition"},), Contract.hygiene, Result.fail,
         "degenerate_repetition"),
    Case("tool-no-call", ({"kind": "tool_no_call"},), Contract.tools, Result.fail, "no_call"),
    Case("tool-unknown", ({"kind": "tool_unknown_name"},), Contract.tools, Result.fail,
         "unknown_name"),
    Case("tool-invalid-json", ({"kind": "tool_invalid_json"},), Contract.tools, Result.fail,
         "invalid_json"),
    Case("tool-schema", ({"kind": "tool_schema_mismatch"},), Contract.tools, Result.fail,
         "schema_mismatch"),
    # a stream that opens and stays silent is slow, not a transport error
    Case("stall-before-token", ({"kind": "stall", "after_tokens": 0},), Contract.ttft,
         Result.fail, "stalled", client=SHORT_DEADLINES),
]  # fmt: skip
TRANSPORT = [
    Case("stall", ({"kind": "stall"},), None, Result.transport_error, "timeout",
         client=SHORT_DEADLINES),
    Case("http-429", ({"kind": "http_error", "status": 429},), None, Result.transport_error,
         "rate_limited"),
    Case("http-500", ({"kind": "http_error", "status": 500},), None, Result.transport_error,
         "provider_error"),
    Case("http-503", ({"kind": "http_error", "status": 503},), None, Result.transport_error,
         "provider_error"),
    Case("disconnect", ({"kind": "disconnect"},), None, Result.transport_error,
         "provider_error"),
    Case("midstream", ({"kind": "midstream_error"},), None, Result.transport_error,
         "provider_error"),
    Case("served-by", ({"kind": "served_by", "tag": "healthy"},), None, Result.inconclusive,
         "attribution_mismatch"),
]  # fmt: skip
CASES = QUALITY + TRANSPORT


def scenario() -> dict[str, Any]:
    providers = [
        provider("healthy"),
        provider("plain", parameters=["max_tokens", "temperature"]),
        provider("thinker", {"kind": "reasoning_first", "ms": 80}),
        provider("filterhost", {"kind": "refusal"}, parameters=["max_tokens"]),
        *(provider(c.tag, *c.faults) for c in CASES),
    ]
    return {"seed": 5, "models": [{"id": MODEL, "providers": providers}]}


# cases that wait on the real clock (a slow first token, a stall to its deadline): `make test`'s
WAITING = {"slow", "stall-before-token", "stall"}


def param(case: Case) -> Any:
    return pytest.param(case, id=case.tag, marks=[pytest.mark.slow] if case.tag in WAITING else [])


@pytest.fixture(scope="module")
def running() -> Iterator[RunningSimulator]:
    with start_simulator(scenario(), detector=False) as started:
        yield started


@pytest.fixture
def sim(running: RunningSimulator) -> RunningSimulator:
    """The module's simulator as loaded: each test's answers do not depend on which tests asked
    before it in this process (parallel workers split a module's tests between them)."""
    running.state.reset()
    return running


@pytest.fixture(scope="module")
def probes() -> ProbeSet:
    return probe_set(LANGUAGES)


@pytest.fixture(scope="module")
def analyzer() -> LanguageAnalyzer:
    analyzer = LanguageAnalyzer(LANGUAGES)
    analyzer.warm()
    return analyzer


def run(
    sim: RunningSimulator,
    probes: ProbeSet,
    analyzer: LanguageAnalyzer,
    tags: list[str],
    language: str = "en",
    **client: float,
) -> dict[str, EndpointProbing]:
    return probe_pass(
        sim.base_url, MODEL, tags, probes=probes, analyzer=analyzer, language=language,
        ttft_threshold_s=TTFT_THRESHOLD_S, **client,
    )  # fmt: skip


def results(probing: EndpointProbing) -> dict[Contract, ContractResult]:
    return {r.contract: r for r in probing.results}


def shown(probing: EndpointProbing) -> str:
    return "\n".join(f"{r.contract}: {r.result} {r.reason} | {r.detail}" for r in probing.results)


@pytest.mark.parametrize("case", [param(c) for c in QUALITY])
def test_quality_fault_fails_the_contract_it_breaks(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer, case: Case
) -> None:
    probing = run(sim, probes, analyzer, [case.tag], case.language, **case.client)[case.tag]
    assert case.contract is not None
    judged = results(probing)[case.contract]
    assert judged.result is case.result, shown(probing)
    if isinstance(case.reason, tuple):
        assert judged.reason in case.reason, shown(probing)
    elif case.reason is not None:
        assert judged.reason == case.reason, shown(probing)
    assert judged.detail  # the result explains itself
    assert aggregate(MODEL, case.tag, probing.results).verdict is Verdict.fail


def test_language_mix_names_the_foreign_language_and_is_confirmed_by_rechecks(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probing = run(sim, probes, analyzer, ["mix"], "pt")["mix"]
    judged = results(probing)[Contract.language]
    assert judged.result is Result.fail
    # half the sentences in es: a switch, mixing, or (when one sentence is labelled) a wrong one
    assert judged.reason in ("language_switch", "language_mixing", "wrong_language")
    assert "es in" in judged.detail and "of a pt answer" in judged.detail
    language_probes = [o for o in probing.observations if o.contract is Contract.language]
    assert sorted(o.attempt for o in language_probes) == [1, 2, 3]  # two re-checks at once


@pytest.mark.parametrize("case", [param(c) for c in TRANSPORT])
def test_transport_fault_and_wrong_provider_are_no_evidence(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer, case: Case
) -> None:
    probing = run(sim, probes, analyzer, [case.tag], **case.client)[case.tag]
    judged = results(probing)
    assert set(judged) == set(Contract)
    for contract, r in judged.items():
        assert r.result is case.result, shown(probing)
        if contract is Contract.language and case.result is Result.transport_error:
            assert str(case.reason) in r.detail, shown(probing)  # judge_language sets no reason
        else:
            assert r.reason == case.reason, shown(probing)
    expected = Verdict.inconclusive if case.tag == "served-by" else Verdict.transport_error
    assert aggregate(MODEL, case.tag, probing.results).verdict is expected


def test_wrong_provider_is_seen_on_the_wire_and_never_counted(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probing = run(sim, probes, analyzer, ["served-by"])["served-by"]
    assert probing.observations
    for o in probing.observations:
        assert o.served_by == "Healthy" and not o.attribution_ok and not o.completed
    assert all("answered by Healthy" in r.detail for r in probing.results
               if r.contract is not Contract.hygiene)  # fmt: skip


@pytest.mark.slow
def test_stall_before_the_first_token_is_a_censored_slow_sample(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probing = run(sim, probes, analyzer, ["stall-before-token"], **SHORT_DEADLINES)
    stalled = probing["stall-before-token"]
    errors = {o.error for o in stalled.observations}
    assert errors == {"stalled: the stream opened but sent no token within 0.7 s"}
    assert all(
        o.ttft_censored and o.ttft_s == 0.7 and o.status == 200 for o in stalled.observations
    )
    judged = results(stalled)
    assert judged[Contract.ttft].result is Result.fail, shown(stalled)
    assert "counted at 0.7 s" in judged[Contract.ttft].detail
    # every probe stalled: each one's own contract saw a timeout, not evidence either way
    for contract in set(Contract) - {Contract.ttft}:
        assert judged[contract].result is Result.transport_error, shown(stalled)
    after = run(sim, probes, analyzer, ["stall"], **SHORT_DEADLINES)["stall"]
    assert {o.error for o in after.observations} == {"stream not finished within 1 s"}
    assert not any(o.ttft_censored for o in after.observations)  # a token came: not a stall


def test_healthy_endpoint_passes_every_contract(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    for language in LANGUAGES:
        probing = run(sim, probes, analyzer, ["healthy"], language)["healthy"]
        assert {r.result for r in probing.results} == {Result.passed}, shown(probing)
        assert aggregate(MODEL, "healthy", probing.results).verdict is Verdict.passed
        for o in probing.observations:
            assert o.completed and o.usage.cost_usd is not None and o.usage.cost_usd > 0


def test_rechecks_are_sent_only_after_a_first_look_failure(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probed = run(sim, probes, analyzer, ["healthy", "invalid-json", "garbage"])
    sent = {
        tag: sorted((o.contract.value, o.attempt) for o in p.observations)
        for tag, p in probed.items()
    }
    planned = sorted(
        [("ttft", 1), ("ttft", 2), ("ttft", 3), ("refusal", 1), ("language", 1), ("schema", 1),
         ("tools", 1)]
    )  # fmt: skip
    assert sent["healthy"] == planned  # nothing failed: nothing more was sent
    assert sent["invalid-json"] == sorted([*planned, ("schema", 2), ("schema", 3)])
    # hygiene has no probe of its own: the language probe's answers re-check it (and the stray
    # prefix broke the JSON answer too: its schema is re-checked as well)
    extra = [("language", 2), ("language", 3), ("schema", 2), ("schema", 3)]
    assert sent["garbage"] == sorted([*planned, *extra])
    hygiene = results(probed["garbage"])[Contract.hygiene]
    assert hygiene.result is Result.fail and "confirmed, 3/3 looks fail" in hygiene.detail


def test_endpoint_without_tools_or_structured_outputs_is_not_applicable_there(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probing = run(sim, probes, analyzer, ["plain"])["plain"]
    judged = results(probing)
    assert judged[Contract.schema].result is Result.not_applicable
    assert judged[Contract.tools].result is Result.not_applicable
    others = {c: r.result for c, r in judged.items() if c not in (Contract.schema, Contract.tools)}
    assert set(others.values()) == {Result.passed}, shown(probing)
    sent = {o.contract for o in probing.observations}
    assert Contract.schema not in sent and Contract.tools not in sent  # not even probed
    assert aggregate(MODEL, "plain", probing.results).verdict is Verdict.passed


def test_reasoning_first_passes_with_ttft_measured_to_content(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probing = run(sim, probes, analyzer, ["thinker"])["thinker"]
    assert {r.result for r in probing.results} == {Result.passed}, shown(probing)
    texts = [o for o in probing.observations if o.contract is Contract.ttft]
    for o in texts:
        assert o.reasoning_s is not None and o.ttft_s is not None
        assert o.reasoning_s < o.ttft_s  # reasoning recorded beside it
        assert o.ttft_s >= 0.08  # content came after the 80 ms of reasoning
    assert results(probing)[Contract.ttft].figure >= 0.08  # type: ignore[operator]


def test_positive_control_that_filters_keeps_the_refusal_results(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probed = run(sim, probes, analyzer, ["filterhost", "healthy", "refuser"])
    outcome = judge_round(
        MODEL,
        {tag: p.results for tag, p in probed.items()},
        positive_controls=["filterhost"],
        rules=PolicyRules(),
    )
    refusal = {tag: v.result_of(Contract.refusal) for tag, v in outcome.verdicts.items()}
    assert refusal["healthy"].result is Result.passed  # type: ignore[union-attr]
    assert refusal["refuser"].result is Result.fail  # type: ignore[union-attr]
    assert refusal["filterhost"].reason == "positive_control"  # type: ignore[union-attr]
    # Its expected refusal never counts against it. The simulated host refuses every prose
    # probe, so no answer of it says anything about its language or hygiene: inconclusive.
    control = outcome.verdicts["filterhost"]
    assert control.verdict is Verdict.inconclusive
    assert {r.contract: r.reason for r in control.results if r.result is Result.inconclusive} == {
        Contract.refusal: "positive_control",
        Contract.language: "no_answer",
        Contract.hygiene: "too_few_answers",
    }
    assert not [e for e in outcome.events if e.kind == "probe_weak"]


def test_positive_control_that_does_not_filter_makes_refusal_inconclusive(
    sim: RunningSimulator, probes: ProbeSet, analyzer: LanguageAnalyzer
) -> None:
    probed = run(sim, probes, analyzer, ["plain", "healthy", "refuser"])
    outcome = judge_round(
        MODEL,
        {tag: p.results for tag, p in probed.items()},
        positive_controls=["plain"],  # named as a filtering host, but it answered normally
        rules=PolicyRules(),
    )
    for tag in ("healthy", "refuser"):
        judged = outcome.verdicts[tag].result_of(Contract.refusal)
        assert judged is not None and judged.result is Result.inconclusive
        assert judged.reason == "probe_weak"
    assert outcome.verdicts["healthy"].verdict is Verdict.inconclusive
    weak = [e for e in outcome.events if e.kind == "probe_weak"]
    assert len(weak) == 1 and "plain" in weak[0].detail["why"]
