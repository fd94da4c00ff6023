"""Which answers of a round say something about a host's writing. Pure.

Language and hygiene judge every such answer of the round, not only the language probe's: the
ttft samples, the refusal continuation, the language probe and its re-checks. Left out are the
JSON answers of the schema and tools probes, and answers that show no writing of the host: a
refusal, an empty answer, one cut by a filter or by ``max_tokens``, one that ended in an error,
and anything not completed (transport errors, another provider's answer).
"""

from __future__ import annotations

from collections.abc import Iterable

from canary.core.contracts.refusal import HEAD_CHARS, PatternsFor, find_refusal
from canary.core.model import Contract, Observation

PROSE = frozenset({Contract.ttft, Contract.refusal, Contract.language})
CUT_SHORT = frozenset({"length", "content_filter", "error"})


def is_prose_answer(o: Observation, patterns_for: PatternsFor) -> bool:
    """A completed, uncut, non-refusing prose answer: evidence for language and hygiene."""
    return (
        o.completed
        and o.contract in PROSE
        and bool(o.content.strip())
        and o.finish_reason not in CUT_SHORT
        and find_refusal(o.content, patterns_for(o.language or "en"), HEAD_CHARS) is None
    )


def prose_answers(
    observations: Iterable[Observation], patterns_for: PatternsFor
) -> list[Observation]:
    return [o for o in observations if is_prose_answer(o, patterns_for)]
