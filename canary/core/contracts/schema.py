"""Structured output: a small object through ``response_format: json_schema``, validated. Pure.

Rules, as decided for this contract:

- ``not_applicable`` when the endpoint does not advertise ``structured_outputs`` (the caller
  passes ``applicable``; see ``ProbeSet.applicable``).
- A completed answer must be one JSON document that validates against the schema. Leading and
  trailing whitespace is tolerated (real hosts send it); a Markdown code fence or prose around the
  JSON is not: under ``response_format`` the host promised raw JSON, and apps parse it as such.
- An answer that does not parse and stopped on ``length`` was cut by our ``max_tokens``: that is
  an inconclusive sample, not a capability failure. An answer the host's filter ended
  (``content_filter``) is no schema evidence either (reason ``filtered``): it is a refusal look.
- The first look fails when most completed answers fail (usually there is one); the detail carries
  the JSON parser's or the validator's (jsonschema ``best_match``) message. It is then re-checked
  by two more answers, each judged alone (:func:`schema_look`): a host whose JSON breaks now and
  then fails a round only when a re-check breaks too.
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
from canary.core.model import Contract, ContractResult, Observation, Result


def parse_json(text: str) -> tuple[JsonValue, str | None]:
    """(value, None) for one JSON document (whitespace around it allowed), else (None, message)."""
    stripped = text.strip()
    if not stripped:
        return None, "empty answer, no JSON"
    try:
        return json.loads(stripped), None
    except json.JSONDecodeError as exc:
        what = "a Markdown code fence" if stripped.startswith("```") else "not valid JSON"
        # some of the parser's messages end in "at" already ("Unterminated string starting at")
        where = f"at line {exc.lineno} column {exc.colno}"
        return None, f"{what}: {exc.msg.removesuffix(' at')} {where}"


UNSURE = frozenset({"truncated", FILTERED})  # inconclusive samples, not schema failures


def _judge_one(o: Observation, schema: dict[str, JsonValue]) -> tuple[str | None, str]:
    if is_filtered(o):
        return FILTERED, FILTERED_WHY
    value, problem = parse_json(o.content)
    if problem is not None:
        if o.finish_reason == "length":
            return "truncated", f"{problem} (cut by max_tokens, finish_reason length)"
        return "invalid_json", problem
    message = schema_error(schema_validator(schema), value)
    if message is not None:
        return "schema_mismatch", message
    return None, ""


def judge_schema(
    observations: Sequence[Observation], schema: dict[str, JsonValue], applicable: bool
) -> ContractResult:
    if not applicable:
        return ContractResult(
            Contract.schema,
            Result.not_applicable,
            "endpoint does not advertise structured_outputs",
            reason="not_advertised",
        )
    done = completed(observations)
    if not done:
        return no_evidence(Contract.schema, observations)
    judged = [(o, *_judge_one(o, schema)) for o in done]
    failing = [j for j in judged if j[1] is not None and j[1] not in UNSURE]
    unsure = [j for j in judged if j[1] in UNSURE]
    result = majority_result(len(failing), len(unsure), len(done))
    counts = f"{len(failing)}/{len(done)} answers broke the schema"
    if failing or unsure:
        reason = most_common(r for _, r, _ in failing if r) or most_common(
            r for _, r, _ in unsure if r
        )
        o, _, why = next(j for j in failing + unsure if j[1] == reason)
        return ContractResult(
            Contract.schema,
            result,
            f"{why}; {counts}",
            sample=sample_of(o.content),
            reason=reason,
        )
    return ContractResult(
        Contract.schema,
        Result.passed,
        f"{counts}: every answer is JSON that validates",
        sample=sample_of(done[0].content),
    )


def schema_look(o: Observation, schema: dict[str, JsonValue]) -> Recheck:
    """One re-check answer of the structured-output probe, judged alone."""
    if not o.completed:
        return not_an_answer(o)
    reason, why = _judge_one(o, schema)
    if reason is None:
        return Recheck(Result.passed, "valid")
    return Recheck(Result.inconclusive if reason in UNSURE else Result.fail, why)
