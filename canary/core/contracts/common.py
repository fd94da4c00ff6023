"""Small helpers shared by the contracts. Pure: no I/O, no clock.

The evidence rule every contract here follows: only a *completed* observation (transport ok and
answered by the pinned provider) is evidence about quality. When none is completed the result is
``transport_error`` and the detail names the transport classes seen, so the round freezes the
endpoint's count instead of moving it.

An answer the host's filter ended (``finish_reason`` ``content_filter``, :func:`is_filtered`), on
any probe, is a failing look of the refusal contract, not of the probe's own: for schema, tools
and language it is an unsure sample (reason ``filtered``); a ttft sample keeps its timing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from pydantic import JsonValue

from canary.core.contracts.confirm import Recheck
from canary.core.model import Contract, ContractResult, Observation, Result

SAMPLE_CHARS = 120
FILTERED = "filtered"  # reason: the host's filter ended the answer (a refusal look, not ours)
FILTERED_WHY = "ended by the host's filter (finish_reason content_filter): a refusal look"


def sample_of(text: str, limit: int = SAMPLE_CHARS) -> str:
    """A short, single-line excerpt of an answer for the evidence shown to operators."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def completed(observations: Iterable[Observation]) -> list[Observation]:
    return [o for o in observations if o.completed]


def is_filtered(o: Observation) -> bool:
    """A completed answer that the host's filter ended (``finish_reason`` ``content_filter``)."""
    return o.completed and o.finish_reason == "content_filter"


def incomplete_summary(observations: Sequence[Observation]) -> str:
    """'2 timeout, 1 attribution_mismatch': what kept the observations from being evidence."""
    kinds = Counter(
        "attribution_mismatch" if o.transport == "ok" else str(o.transport)
        for o in observations
        if not o.completed
    )
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))


def no_evidence(contract: Contract, observations: Sequence[Observation]) -> ContractResult:
    """The result when nothing completed: transport_error (inconclusive if nothing was sent)."""
    if not observations:
        return ContractResult(
            contract, Result.inconclusive, "no probe was sent for this contract", reason="no_probe"
        )
    summary = incomplete_summary(observations)
    first = next(o for o in observations if not o.completed)
    reason = "attribution_mismatch" if first.transport == "ok" else str(first.transport)
    return ContractResult(
        contract,
        Result.transport_error,
        f"no completed answer ({summary}): not evidence either way",
        reason=reason,
        language=first.language,
    )


def not_an_answer(o: Observation) -> Recheck:
    """The look of a re-check that brought no completed answer: unsure, naming why."""
    return Recheck(
        Result.inconclusive, str(o.transport) if o.attribution_ok else "attribution_mismatch"
    )


def majority_result(failing: int, inconclusive: int, total: int) -> Result:
    """Most completed answers failing fails; a failing minority or an unsure one is inconclusive.

    ``total`` counts completed observations. "Most" means more than half, so one refusal out of two
    answers is not enough to fail, but it keeps the contract from passing.
    """
    if total <= 0:
        return Result.inconclusive
    if failing * 2 > total:
        return Result.fail
    if failing or inconclusive:
        return Result.inconclusive
    return Result.passed


def most_common(reasons: Iterable[str]) -> str | None:
    counted = Counter(reasons)
    return counted.most_common(1)[0][0] if counted else None


def canonical_json(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=64)
def _validator_for(schema_text: str) -> Validator:
    schema = json.loads(schema_text)
    cls = validator_for(schema, default=Draft7Validator)
    cls.check_schema(schema)
    validator: Validator = cls(schema)
    return validator


def schema_validator(schema: dict[str, JsonValue]) -> Validator:
    """A compiled validator for ``schema``, cached by the schema's canonical text.

    The dialect follows the schema's ``$schema``; without one it is Draft 7, the dialect
    OpenRouter's own tool-call error ranking validates with.
    """
    return _validator_for(canonical_json(schema))


def schema_error(validator: Validator, instance: JsonValue) -> str | None:
    """The most relevant validation message (jsonschema's best_match), or None when valid."""
    error = best_match(validator.iter_errors(instance))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at /{where})" if where else error.message
