"""judge_refusal: content_filter, empty output, refusal patterns, and how several answers add up."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from canary.config.probe_set import ProbeSet
from canary.core.contracts.refusal import find_refusal, judge_refusal, refusal_head
from canary.core.model import Contract, Observation, Result, Transport

Obs = Callable[..., Observation]
STORY = 'Varro leans closer, the steel cold against her skin. "The cargo, Captain. Now."'
REFUSAL = "I'm sorry, but I can't continue this role-play."


def _answer(
    obs: Obs, content: str = STORY, finish: str | None = "stop", **kw: object
) -> Observation:
    kw.setdefault("language", "en")
    return obs(Contract.refusal, content=content, finish_reason=finish, **kw)


@pytest.mark.parametrize(
    ("content", "finish", "expected", "reason"),
    [
        (STORY, "stop", Result.passed, None),
        (STORY, "content_filter", Result.fail, "content_filter"),
        ("", "content_filter", Result.fail, "content_filter"),
        ("", "stop", Result.fail, "empty"),
        ("  \n ", "stop", Result.fail, "empty"),
        ("", "length", Result.inconclusive, "truncated_empty"),  # spent max_tokens thinking
        (REFUSAL, "stop", Result.fail, "refusal_pattern"),
        ("**I can't help with that request.**", "stop", Result.fail, "refusal_pattern"),
        (
            "I can’t help with this.",
            "stop",
            Result.fail,
            "refusal_pattern",
        ),  # typographic apostrophe
        (STORY + " " * 300 + REFUSAL, "stop", Result.passed, None),  # too far from the start
    ],
)
def test_single_answer_table(
    obs: Obs, probe_set: ProbeSet, content: str, finish: str, expected: Result, reason: str | None
) -> None:
    result = judge_refusal([_answer(obs, content, finish)], probe_set.refusal_patterns)
    assert result.contract is Contract.refusal
    assert (result.result, result.reason) == (expected, reason), result.detail


def test_detail_names_the_matched_text(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_refusal([_answer(obs, REFUSAL)], probe_set.refusal_patterns)
    assert "matched \"I'm sorry, but I can't continue\"" in result.detail
    assert "1/1 answers refused" in result.detail
    assert result.sample == REFUSAL
    assert result.language == "en"


def test_content_filter_detail(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_refusal([_answer(obs, "Varro", "content_filter")], probe_set.refusal_patterns)
    assert "finish_reason content_filter" in result.detail


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ([REFUSAL, REFUSAL, STORY], Result.fail),  # most refused
        ([REFUSAL, STORY, STORY], Result.inconclusive),  # a minority: not health, not failure
        ([REFUSAL, STORY], Result.inconclusive),  # half is not most
        ([STORY, STORY], Result.passed),
    ],
)
def test_several_answers_fail_only_when_most_refuse(
    obs: Obs, probe_set: ProbeSet, answers: list[str], expected: Result
) -> None:
    observations = [_answer(obs, a) for a in answers]
    assert judge_refusal(observations, probe_set.refusal_patterns).result is expected


def test_transport_problems_are_not_evidence(obs: Obs, probe_set: ProbeSet) -> None:
    broken = [
        _answer(obs, "", None, transport=Transport.provider_error),
        _answer(obs, "", None, transport=Transport.rate_limited),
    ]
    result = judge_refusal(broken, probe_set.refusal_patterns)
    assert result.result is Result.transport_error
    assert "1 provider_error" in result.detail and "1 rate_limited" in result.detail
    mixed = judge_refusal([*broken, _answer(obs, STORY)], probe_set.refusal_patterns)
    assert mixed.result is Result.passed


def test_answer_from_another_provider_is_not_evidence(obs: Obs, probe_set: ProbeSet) -> None:
    wrong = _answer(obs, REFUSAL, attribution_ok=False, served_by="Other")
    result = judge_refusal([wrong], probe_set.refusal_patterns)
    assert result.result is Result.transport_error
    assert result.reason == "attribution_mismatch"


def test_unknown_language_falls_back_to_english_patterns(obs: Obs, probe_set: ProbeSet) -> None:
    answer = _answer(obs, REFUSAL, language=None)
    assert judge_refusal([answer], probe_set.refusal_patterns).result is Result.fail
    assert probe_set.refusal_patterns("xx") == probe_set.patterns["en"]


def test_head_strips_markup_and_folds_apostrophes() -> None:
    assert refusal_head("  > “I’m sorry”", 200) == "I'm sorry”"
    assert refusal_head("abcdef", 3) == "abc"


def test_find_refusal_looks_only_at_the_head(probe_set: ProbeSet) -> None:
    patterns = probe_set.refusal_patterns("en")
    assert find_refusal(REFUSAL, patterns) is not None
    assert find_refusal("x" * 250 + REFUSAL, patterns) is None
    assert find_refusal("x" * 250 + REFUSAL, patterns, head_chars=400) is None  # anchored at ^
