"""judge_tools: each failure class is named; forced vs unforced calls; transport stays transport."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from canary.config.probe_set import ProbeSet
from canary.core.contracts.tools import judge_tools
from canary.core.model import Contract, Observation, Result, ToolCall, Transport

Obs = Callable[..., Observation]
ARGS = {
    "location": "ruined chapel",
    "time_of_day": "dawn",
    "characters": ["Mira", "Tobin"],
    "summary": "The party climbs out of the crypt.",
}


def _call(name: str = "record_scene_change", arguments: str | None = None) -> ToolCall:
    return ToolCall(0, "call_1", name, json.dumps(ARGS) if arguments is None else arguments)


def _answer(
    obs: Obs, *calls: ToolCall, finish: str | None = "tool_calls", content: str = "", **kw: object
) -> Observation:
    return obs(Contract.tools, tool_calls=calls, finish_reason=finish, content=content, **kw)


@pytest.mark.parametrize(
    ("calls", "finish", "forced", "expected", "reason", "in_detail"),
    [
        (
            [_call()],
            "tool_calls",
            True,
            Result.passed,
            None,
            "forced call named record_scene_change",
        ),
        ([_call()], "tool_calls", False, Result.passed, None, ""),
        ([], "stop", True, Result.fail, "no_call", "no tool call although one was forced"),
        ([], "stop", False, Result.inconclusive, "no_call_unforced", "not forced"),
        (
            [_call("record_scene")],
            "tool_calls",
            True,
            Result.fail,
            "unknown_name",
            "'record_scene'",
        ),
        (
            [_call(arguments='{"location": "chapel",')],
            "tool_calls",
            True,
            Result.fail,
            "invalid_json",
            "not valid JSON",
        ),
        ([_call(arguments="")], "tool_calls", True, Result.fail, "invalid_json", ""),
        (
            [_call(arguments='{"location": "chapel", "time_of')],
            "length",
            True,
            Result.inconclusive,
            "truncated",
            "max_tokens",
        ),
        (
            [_call(arguments=json.dumps({**ARGS, "time_of_day": "midnight"}))],
            "tool_calls",
            True,
            Result.fail,
            "schema_mismatch",
            "'midnight' is not one of",
        ),
        (
            [_call(arguments=json.dumps({k: v for k, v in ARGS.items() if k != "summary"}))],
            "tool_calls",
            True,
            Result.fail,
            "schema_mismatch",
            "'summary' is a required property",
        ),
        (
            [_call(arguments=json.dumps({**ARGS, "characters": []}))],
            "tool_calls",
            True,
            Result.fail,
            "schema_mismatch",
            "at /characters",
        ),
        ([_call(), _call("summon_dragon")], "tool_calls", True, Result.fail, "unknown_name", ""),
    ],
)
def test_table(
    obs: Obs,
    probe_set: ProbeSet,
    calls: list[ToolCall],
    finish: str,
    forced: bool,
    expected: Result,
    reason: str | None,
    in_detail: str,
) -> None:
    result = judge_tools([_answer(obs, *calls, finish=finish)], probe_set.tool, True, forced)
    assert result.contract is Contract.tools
    assert (result.result, result.reason) == (expected, reason), result.detail
    assert in_detail in result.detail


def test_not_applicable_without_tools(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_tools([_answer(obs)], probe_set.tool, False, False)
    assert result.result is Result.not_applicable


def test_transport_problems_stay_transport_errors(obs: Obs, probe_set: ProbeSet) -> None:
    failed = _answer(obs, finish=None, transport=Transport.timeout)
    result = judge_tools([failed], probe_set.tool, True, True)
    assert result.result is Result.transport_error
    assert "1 timeout" in result.detail


def test_sample_shows_the_call(obs: Obs, probe_set: ProbeSet) -> None:
    result = judge_tools([_answer(obs, _call("nope", "{}"))], probe_set.tool, True, True)
    assert result.sample == "nope({})"


def test_reason_is_the_most_frequent_failure(obs: Obs, probe_set: ProbeSet) -> None:
    answers = [
        _answer(obs, _call(arguments="{bad")),
        _answer(obs, _call(arguments="{bad")),
        _answer(obs, _call("other")),
    ]
    result = judge_tools(answers, probe_set.tool, True, True)
    assert (result.result, result.reason) == (Result.fail, "invalid_json")
    assert "3/3 answers" in result.detail


def test_prose_answer_when_forced_fails_with_no_call(obs: Obs, probe_set: ProbeSet) -> None:
    prose = _answer(obs, finish="stop", content="The party climbs into the chapel at dawn.")
    result = judge_tools([prose], probe_set.tool, True, True)
    assert (result.result, result.reason) == (Result.fail, "no_call")
    assert result.sample.startswith("The party climbs")
