"""Contract 5, text hygiene: over the round's completed text answers of one endpoint, stray
leading punctuation or token fragments and degenerate repetition; fails when most answers show it.

One odd answer proves nothing (generation is stochastic); the real case it catches is a host
that prefixed 19 of 20 answers with a stray fragment while its peers did so 0 times in 49.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from canary.core.contracts.common import no_evidence
from canary.core.model import Contract, ContractResult, Observation, Result
from canary.text.hygiene import degenerate_repetition, leading_garbage

MIN_ANSWERS = 2
# Answers that are JSON by design (structured output, tool calls) are not prose.
NOT_PROSE = frozenset({Contract.schema, Contract.tools})
_SAMPLE = 80


def judge_hygiene(observations: Sequence[Observation]) -> ContractResult:
    """Fail when more than half (and at least 2) of the completed text answers are unclean."""
    answers = [
        o for o in observations if o.completed and o.contract not in NOT_PROSE and o.content.strip()
    ]
    n = len(answers)
    prose = [o for o in observations if o.contract not in NOT_PROSE]
    if prose and not any(o.completed for o in prose):
        return no_evidence(Contract.hygiene, prose)  # transport only: no evidence either way
    if n < MIN_ANSWERS:
        return ContractResult(
            Contract.hygiene,
            Result.inconclusive,
            f"{n} completed text answer{'s' if n != 1 else ''}, need {MIN_ANSWERS}",
            reason="too_few_answers",
        )
    leading: list[tuple[Observation, str]] = []
    repeating: list[tuple[Observation, str]] = []
    flagged = 0
    for o in answers:
        garbage, repetition = leading_garbage(o.content), degenerate_repetition(o.content)
        if garbage is not None:
            leading.append((o, garbage))
        if repetition is not None:
            repeating.append((o, repetition))
        flagged += garbage is not None or repetition is not None
    parts: list[str] = []
    if leading:
        common = Counter(e for _, e in leading).most_common(1)[0][0]
        parts.append(f"stray leading fragment in {len(leading)}/{n} answers: {common!r}")
    if repeating:
        parts.append(f"degenerate repetition in {len(repeating)}/{n} answers: {repeating[0][1]}")
    failed = flagged >= MIN_ANSWERS and 2 * flagged > n
    if not parts:
        detail = f"clean start and no repetition in {n}/{n} answers"
    else:
        detail = "; ".join(parts) + ("" if failed else f" (fails when most of {n} answers show it)")
    worst = (leading or repeating or [(answers[0], "")])[0][0]
    reason = None
    if failed:
        reason = "leading_garbage" if len(leading) >= len(repeating) else "degenerate_repetition"
    return ContractResult(
        Contract.hygiene,
        Result.fail if failed else Result.passed,
        detail,
        figure=flagged / n,
        sample=_sample(worst.content),
        reason=reason,
    )


def _sample(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SAMPLE else flat[: _SAMPLE - 1] + "…"
