"""Which answers of a round say something about a host's writing. Pure.

Language and hygiene judge every such answer of the round, not only the language probe's: the
ttft samples, the refusal continuation, the language probe and its re-checks. Left out are the
JSON answers of the schema and tools probes, and answers that show no writing of the host: a
refusal, an empty answer, one cut by a filter or by ``max_tokens``, one that ended in an error,
and anything not completed (transport errors, another provider's answer).

Nor are the positive controls' answers: a control is a host known to filter, probed to show that
the refusal probe can catch it; what it writes is not evidence of the model's language or
hygiene, for any endpoint, the control itself included (its language and hygiene are then
``inconclusive``, reason ``positive_control``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from canary.core.contracts.refusal import HEAD_CHARS, PatternsFor, find_refusal
from canary.core.model import Contract, ContractResult, Observation, Result

PROSE = frozenset({Contract.ttft, Contract.refusal, Contract.language})
CUT_SHORT = frozenset({"length", "content_filter", "error"})
POSITIVE_CONTROL = "positive_control"  # the reason (the same as canary.core.verdict's)


def is_prose_answer(
    o: Observation, patterns_for: PatternsFor, controls: Collection[str] = ()
) -> bool:
    """A completed, uncut, non-refusing prose answer of a host that is not one of the positive
    ``controls``: evidence for language and hygiene."""
    return (
        o.completed
        and o.tag not in controls
        and o.contract in PROSE
        and bool(o.content.strip())
        and o.finish_reason not in CUT_SHORT
        and find_refusal(o.content, patterns_for(o.language or "en"), HEAD_CHARS) is None
    )


def prose_answers(
    observations: Iterable[Observation], patterns_for: PatternsFor, controls: Collection[str] = ()
) -> list[Observation]:
    return [o for o in observations if is_prose_answer(o, patterns_for, controls)]


def from_controls(observations: Iterable[Observation], controls: Collection[str]) -> bool:
    """True when every observation is a positive control's (the endpoint judged is a control):
    its language and hygiene have no evidence by rule, whatever it answered."""
    tags = [o.tag for o in observations]
    return bool(tags) and all(tag in controls for tag in tags)


def control_result(contract: Contract, language: str | None = None) -> ContractResult:
    """Language or hygiene of a positive control: inconclusive, its answers are no evidence."""
    return ContractResult(
        contract,
        Result.inconclusive,
        "a positive control's answers are not evidence for language or hygiene",
        reason=POSITIVE_CONTROL,
        language=language,
    )
