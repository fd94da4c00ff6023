"""Tool calls: a fixed role-play function, called (forced where possible) and checked. Pure.

The failure classes are the three OpenRouter's own tool-error ranking uses, plus a missing call:

- ``no_call``: no tool call although ``tool_choice`` forced one;
- ``unknown_name``: a call names another function than the one offered;
- ``invalid_json``: the reassembled arguments are not one JSON document;
- ``schema_mismatch``: the arguments do not validate against the function's parameters schema
  (the validator's message is in the detail).

Not failures (inconclusive samples): no call when the call could not be forced (``tool_choice``
not advertised, so the model may legitimately answer in prose), a call or answer cut by our
``max_tokens`` (``finish_reason`` length), and an answer the host's filter ended (reason
``filtered``: a refusal look, not a tools one). ``not_applicable`` without ``tools``. The first look
fails when most completed answers fail; the result's ``reason`` names the most frequent failure
class. It is then re-checked by two more answers, each judged alone (:func:`tools_look`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import JsonValue

from canary.core.contracts.common import (
    FILTERED,
    FILTERED_WHY,
    completed,
    is_filtered,
    majority_result,
    most_common,
    no_evidence,
    not_an_answer,
    sample_of,
    schema_error,
    schema_validator,
)
from canary.core.contracts.confirm import Recheck
from canary.core.model import Contract, ContractResult, Observation, Result, ToolCall

INCONCLUSIVE = frozenset({"truncated", "no_call_unforced", FILTERED})


def _function(tool: dict[str, JsonValue]) -> tuple[str, dict[str, JsonValue]]:
    """The tool's function name and parameters' schema (any object when it gives none)."""
    function = tool.get("function", tool)
    if not isinstance(function, dict) or "name" not in function:
        raise ValueError("tool must be {'type': 'function', 'function': {'name', 'parameters'}}")
    parameters = function.get("parameters")
    return str(function["name"]), parameters if isinstance(parameters, dict) else {"type": "object"}


def _judge_call(
    call: ToolCall, name: str, parameters: dict[str, JsonValue]
) -> tuple[str | None, str]:
    if call.name != name:
        return "unknown_name", f"called unknown function {call.name!r} (offered {name!r})"
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError as exc:
        return "invalid_json", f"arguments are not valid JSON: {exc.msg} at column {exc.colno}"
    message = schema_error(schema_validator(parameters), arguments)
    if message is not None:
        return "schema_mismatch", f"arguments do not match the schema: {message}"
    return None, ""


def _judge_one(
    o: Observation, name: str, parameters: dict[str, JsonValue], forced: bool
) -> tuple[str | None, str, str]:
    """(reason or None, explanation, sample)."""
    if is_filtered(o):
        return FILTERED, FILTERED_WHY, sample_of(o.content)
    cut = o.finish_reason == "length"
    if not o.tool_calls:
        if cut:
            return "truncated", "no tool call before max_tokens ran out", sample_of(o.content)
        if not forced:
            return (
                "no_call_unforced",
                "no tool call (tool_choice not advertised, not forced)",
                sample_of(o.content),
            )
        finish = o.finish_reason or "none"
        return (
            "no_call",
            f"no tool call although one was forced (finish_reason {finish})",
            sample_of(o.content),
        )
    for call in o.tool_calls:
        reason, why = _judge_call(call, name, parameters)
        if reason == "invalid_json" and cut:
            reason, why = "truncated", f"{why} (cut by max_tokens)"
        if reason is not None:
            return reason, why, sample_of(f"{call.name}({call.arguments})")
    first = o.tool_calls[0]
    return None, "", sample_of(f"{first.name}({first.arguments})")


def judge_tools(
    observations: Sequence[Observation], tool: dict[str, JsonValue], applicable: bool, forced: bool
) -> ContractResult:
    if not applicable:
        return ContractResult(
            Contract.tools,
            Result.not_applicable,
            "endpoint does not advertise tools",
            reason="not_advertised",
        )
    name, parameters = _function(tool)
    done = completed(observations)
    if not done:
        return no_evidence(Contract.tools, observations)
    judged = [_judge_one(o, name, parameters, forced) for o in done]
    failing = [j for j in judged if j[0] is not None and j[0] not in INCONCLUSIVE]
    unsure = [j for j in judged if j[0] in INCONCLUSIVE]
    result = majority_result(len(failing), len(unsure), len(done))
    counts = f"{len(failing)}/{len(done)} answers with a broken {name} call"
    if failing or unsure:
        reason = most_common(j[0] for j in failing if j[0]) or str(unsure[0][0])
        _, why, sample = next(j for j in failing + unsure if j[0] == reason)
        return ContractResult(
            Contract.tools, result, f"tools: {why}; {counts}", sample=sample, reason=reason
        )
    how = "forced" if forced else "requested"
    return ContractResult(
        Contract.tools,
        Result.passed,
        f"{counts}: every {how} call named {name} with arguments that validate",
        sample=judged[0][2],
    )


def tools_look(o: Observation, tool: dict[str, JsonValue], forced: bool) -> Recheck:
    """One re-check answer of the tool-call probe, judged alone."""
    if not o.completed:
        return not_an_answer(o)
    name, parameters = _function(tool)
    reason, why, _ = _judge_one(o, name, parameters, forced)
    if reason is None:
        return Recheck(Result.passed, f"valid {name} call")
    return Recheck(Result.inconclusive if reason in INCONCLUSIVE else Result.fail, why)
