"""judge_schema: valid objects pass; invalid JSON, prose, fences, schema breaks fail, explained."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from canary.config.probe_set import ProbeSet
from canary.core.contracts.schema import judge_schema, parse_json
from canary.core.model import Contract, Observation, Result, Transport

Obs = Callable[..., Observation]
GOOD = {"character": "Varro", "mood": "tense", "intensity": 4, "line": "The cargo. Now."}


def _answer(obs: Obs, content: str, finish: str | None = "stop", **kw: object) -> Observation:
    return obs(Contract.schema, content=content, finish_reason=finish, **kw)


def _without(key: str) -> str:
    return json.dumps({k: v for k, v in GOOD.items() if k != key})


@pytest.mark.parametrize(
    ("content", "finish", "expected", "reason", "in_detail"),
    [
        (json.dumps(GOOD), "stop", Result.passed, None, "every answer is JSON that validates"),
        ("\n  " + json.dumps(GOOD) + "\n", "stop", Result.passed, None, ""),  # whitespace is fine
        (_without("mood"), "stop", Result.fail, "schema_mismatch", "'mood' is a required property"),
        (
            json.dumps({**GOOD, "intensity": 9}),
            "stop",
            Result.fail,
            "schema_mismatch",
            "9 is greater than the maximum of 5 (at /intensity)",
        ),
        (
            json.dumps({**GOOD, "mood": "smug"}),
            "stop",
            Result.fail,
            "schema_mismatch",
            "'smug' is not one of",
        ),
        (
            json.dumps({**GOOD, "extra": 1}),
            "stop",
            Result.fail,
            "schema_mismatch",
            "Additional properties are not allowed",
        ),
        (json.dumps(GOOD)[:-5], "stop", Result.fail, "invalid_json", "not valid JSON"),
        ("Sure! Here is the scene beat you asked for.", "stop", Result.fail, "invalid_json", ""),
        (
            "```json\n" + json.dumps(GOOD) + "\n```",
            "stop",
            Result.fail,
            "invalid_json",
            "code fence",
        ),
        ("", "stop", Result.fail, "invalid_json", "empty answer"),
        ('{"character": "Varro", "mo', "length", Result.inconclusive, "truncated", "max_tokens"),
        ("", "content_filter", Result.inconclusive, "filtered", "content_filter"),
        (json.dumps(GOOD), "content_filter", Result.inconclusive, "filtered", "refusal look"),
        ("[1, 2]", "stop", Result.fail, "schema_mismatch", "is not of type 'object'"),
    ],
)
def test_table(
    obs: Obs,
    probe_set: ProbeSet,
    content: str,
    finish: str,
    expected: Result,
    reason: str | None,
    in_detail: str,
) -> None:
    result = judge_schema([_answer(obs, content, finish)], probe_set.schema, True)
    assert result.contract is Contract.schema
    assert (result.result, result.reason) == (expected, reason), result.detail
    assert in_detail in result.detail


def test_not_applicable_without_structured_outputs(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_schema([_answer(obs, "prose")], probe_set.schema, False)
    assert result.result is Result.not_applicable


def test_transport_error_is_not_a_schema_failure(obs: Obs, probe_set: ProbeSet) -> None:
    failed = _answer(obs, "", None, transport=Transport.provider_error, error="502")
    result = judge_schema([failed], probe_set.schema, True)
    assert result.result is Result.transport_error
    assert "1 provider_error" in result.detail


def test_fails_only_when_most_answers_break(obs: Obs, probe_set: ProbeSet) -> None:
    good, bad = _answer(obs, json.dumps(GOOD)), _answer(obs, _without("line"))
    assert judge_schema([good, bad], probe_set.schema, True).result is Result.inconclusive
    assert judge_schema([good, bad, bad], probe_set.schema, True).result is Result.fail


def test_sample_shows_the_answer(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_schema([_answer(obs, _without("mood"))], probe_set.schema, True)
    assert result.sample.startswith('{"character": "Varro"')


def test_parse_json_accepts_surrounding_whitespace_only() -> None:
    assert parse_json(' {"a": 1}\n') == ({"a": 1}, None)
    value, problem = parse_json('{"a": 1} trailing')
    assert value is None and problem is not None and "Extra data" in problem


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"mood": "calm', "not valid JSON: Unterminated string starting at line 1 column 10"),
        ('{"mood" "calm"}', "not valid JSON: Expecting ':' delimiter at line 1 column 9"),
        ('{"mood": "a\x01"}', "not valid JSON: Invalid control character at line 1 column 12"),
        ("```json\n{}\n```", "a Markdown code fence: Expecting value at line 1 column 1"),
    ],
)
def test_parse_json_says_where_the_document_breaks_in_plain_words(text: str, problem: str) -> None:
    assert parse_json(text) == (None, problem)
