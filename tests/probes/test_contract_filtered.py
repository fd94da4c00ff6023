"""An answer the host's filter ended (``content_filter``), on any probe, is a failing refusal look,
confirmed 2 of 3 like any refusal failure; the probe's own contract is inconclusive, reason
``filtered`` (issue 30, defect 4). One endpoint's round, judged from its first look and its
re-checks, as the prober asks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from test_contract_confirm import BEAT, CALL, GREETING, STORY, planned

from canary.config.probe_set import ProbeSet
from canary.core.contracts.common import FILTERED
from canary.core.contracts.confirm import NOT_CONFIRMED
from canary.core.contracts.endpoint import Judging, first_look, judge_endpoint
from canary.core.model import Contract, ContractResult, Observation, Result
from canary.text.detect import LanguageAnalyzer

Obs = Callable[..., Observation]
F, P, U = Result.fail, Result.passed, Result.inconclusive


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


def filtered(o: Observation, content: str = "") -> Observation:
    """``o`` ended by the host's filter, after ``content``."""
    return replace(o, content=content, finish_reason="content_filter", tool_calls=())


def results(judged: tuple[ContractResult, ...]) -> dict[Contract, ContractResult]:
    return {r.contract: r for r in judged}


def refusal_rechecks(obs: Obs, *contents_and_finishes: tuple[str, str]) -> list[Observation]:
    return [
        obs(Contract.refusal, content=c, finish_reason=f, language="en", attempt=a)
        for a, (c, f) in enumerate(contents_and_finishes, 2)
    ]


def test_a_filtered_schema_answer_is_a_refusal_look_not_a_schema_break(
    obs: Obs, judging: Judging
) -> None:
    """The demo quarantined its own control for ``schema``: "not valid JSON ... (finish_reason
    content_filter)"."""
    round_ = [filtered(o, '{"char') if o.contract is Contract.schema else o for o in planned(obs)]
    looked = first_look(judging, round_)
    first = results(looked.results)
    assert first[Contract.schema].result is U and first[Contract.schema].reason == FILTERED
    assert (
        first[Contract.refusal].result is F and first[Contract.refusal].reason == "content_filter"
    )
    assert "schema" in first[Contract.refusal].detail
    assert looked.recheck_probes() == (Contract.refusal,)  # confirmed like any refusal failure
    again = refusal_rechecks(obs, ("", "content_filter"), (STORY, "stop"))
    judged = results(judge_endpoint(judging, looked, again))
    assert judged[Contract.refusal].result is F  # 2 of 3 looks fail
    assert judged[Contract.schema].result is U and judged[Contract.schema].reason == FILTERED


def test_a_filtered_answer_not_reproduced_by_the_refusal_rechecks_is_not_confirmed(
    obs: Obs, judging: Judging
) -> None:
    round_ = [filtered(o) if o.contract is Contract.tools else o for o in planned(obs)]
    looked = first_look(judging, round_)
    first = results(looked.results)
    assert first[Contract.tools].result is U and first[Contract.tools].reason == FILTERED
    judged = results(
        judge_endpoint(judging, looked, refusal_rechecks(obs, (STORY, "stop"), (STORY, "stop")))
    )
    assert judged[Contract.refusal].result is P
    assert judged[Contract.refusal].reason == NOT_CONFIRMED


def test_a_filtered_language_answer_leaves_language_inconclusive_when_nothing_else_speaks(
    obs: Obs, judging: Judging
) -> None:
    round_ = [
        filtered(o, "The storm")
        if o.contract in (Contract.language, Contract.ttft, Contract.refusal)
        else o
        for o in planned(obs)
    ]
    first = results(first_look(judging, round_).results)
    assert first[Contract.language].result is U and first[Contract.language].reason == FILTERED
    assert first[Contract.refusal].result is F


def test_a_filtered_ttft_sample_keeps_its_timing(obs: Obs, judging: Judging) -> None:
    slow = [
        filtered(replace(o, ttft_s=14.0), GREETING[:20]) if o.contract is Contract.ttft else o
        for o in planned(obs)
    ]
    first = results(first_look(judging, slow).results)
    assert first[Contract.ttft].result is F and first[Contract.ttft].figure == 14.0
    assert first[Contract.refusal].result is F  # and they are refusal looks too
    fast = [filtered(o, GREETING[:20]) if o.contract is Contract.ttft else o for o in planned(obs)]
    assert results(first_look(judging, fast).results)[Contract.ttft].result is P


def test_a_ttft_probe_filtered_before_any_token_is_no_sample(obs: Obs, judging: Judging) -> None:
    round_ = [
        filtered(replace(o, ttft_s=None)) if o.contract is Contract.ttft else o
        for o in planned(obs)
    ]
    first = results(first_look(judging, round_).results)
    assert first[Contract.ttft].result is U and first[Contract.ttft].reason == FILTERED


def test_a_healthy_round_is_untouched(obs: Obs, judging: Judging) -> None:
    first = results(first_look(judging, planned(obs, schema=BEAT)).results)
    assert {r.result for r in first.values()} == {P}
    assert CALL.name  # the planned round's tool call is the probe's


def test_a_filtered_schema_recheck_is_unsure_not_a_break(obs: Obs, judging: Judging) -> None:
    looked = first_look(judging, planned(obs, schema='{"character": "Mira",'))
    assert looked.recheck_probes() == (Contract.schema,)
    rechecks = [filtered(obs(Contract.schema, attempt=a)) for a in (2, 3)]
    judged = results(judge_endpoint(judging, looked, rechecks))
    assert judged[Contract.schema].result is U  # one broken answer of three proves nothing
