"""One endpoint's round judged contract by contract: the first look, the re-checks it asks for,
and the confirmed results. Pure.

The prober sends the planned probes, asks :func:`first_look` what failed, sends two more answers
to each probe that :meth:`FirstLook.recheck_probes` names (together), then asks
:func:`judge_endpoint` for the results: a contract that failed its first look fails the round
only when one of its re-checks fails too (:mod:`canary.core.contracts.confirm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from canary.core.contracts.confirm import RECHECK_PROBE, Recheck, confirm, recheck_probes
from canary.core.contracts.evidence import (
    control_result,
    from_controls,
    is_prose_answer,
    prose_answers,
)
from canary.core.contracts.hygiene import SHARE, hygiene_look, judge_hygiene
from canary.core.contracts.language import Analyze, judge_language, language_look
from canary.core.contracts.refusal import PatternsFor, judge_refusal, refusal_look
from canary.core.contracts.schema import judge_schema, schema_look
from canary.core.contracts.tools import judge_tools, tools_look
from canary.core.contracts.ttft import judge_ttft, ttft_look
from canary.core.model import Contract, ContractResult, Observation, Result


@dataclass(frozen=True)
class Judging:
    """What one endpoint's answers are held to this round."""

    language: str  # the round's language for this endpoint
    analyze: Analyze
    refusal_patterns: PatternsFor
    schema: dict[str, JsonValue]
    tool: dict[str, JsonValue]
    ttft_threshold_s: float
    max_tokens: int | None  # our max_tokens as the endpoint caps it (refusal: cut short?)
    schema_applicable: bool
    tools_applicable: bool
    tools_forced: bool
    hygiene_share: float = SHARE  # unclean share of the prose answers that fails a first look
    # the model's positive controls: their answers are never language or hygiene evidence
    controls: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class FirstLook:
    results: tuple[ContractResult, ...]  # one per contract, in Contract order
    foreign: str | None  # the foreign language a language re-check must carry to confirm

    def recheck_probes(self) -> tuple[Contract, ...]:
        return recheck_probes(self.results)


def first_look(j: Judging, observations: Sequence[Observation]) -> FirstLook:
    """Every contract judged on the round's planned probes."""
    of = {c: [o for o in observations if o.contract is c] for c in Contract}
    answers = prose_answers(observations, j.refusal_patterns, j.controls)
    if from_controls(observations, j.controls):
        language_result: ContractResult = control_result(Contract.language, j.language)
        hygiene: ContractResult = control_result(Contract.hygiene)
        foreign = None
    else:
        language = judge_language(answers, of[Contract.language], j.language, j.analyze)
        language_result, foreign = language.result, language.foreign
        hygiene = judge_hygiene(answers, observations, j.hygiene_share)
    results = (
        judge_ttft(observations, j.ttft_threshold_s),
        judge_refusal(
            of[Contract.refusal],
            j.refusal_patterns,
            max_tokens=j.max_tokens,
            elsewhere=observations,
        ),
        judge_schema(of[Contract.schema], j.schema, j.schema_applicable),
        language_result,
        hygiene,
        judge_tools(of[Contract.tools], j.tool, j.tools_applicable, j.tools_forced),
    )
    return FirstLook(results, foreign)


def judge_endpoint(
    j: Judging, first: FirstLook, rechecks: Sequence[Observation]
) -> tuple[ContractResult, ...]:
    """The round's results: each first-look failure confirmed (or not) by its re-checks."""
    out = []
    for result in first.results:
        if result.result is not Result.fail:
            out.append(result)
            continue
        probe = RECHECK_PROBE[result.contract]
        looks = [_look(j, result.contract, o, first) for o in rechecks if o.contract is probe]
        out.append(confirm(result, looks))
    return tuple(out)


def _look(j: Judging, contract: Contract, o: Observation, first: FirstLook) -> Recheck:
    if contract is Contract.ttft:
        return ttft_look(o, j.ttft_threshold_s)
    if contract is Contract.refusal:
        return refusal_look(o, j.refusal_patterns, max_tokens=j.max_tokens)
    if contract is Contract.schema:
        return schema_look(o, j.schema)
    if contract is Contract.tools:
        return tools_look(o, j.tool, j.tools_forced)
    eligible = is_prose_answer(o, j.refusal_patterns, j.controls)
    if contract is Contract.language:
        return language_look(o, eligible, j.language, j.analyze, first.foreign)
    return hygiene_look(o, eligible)
