"""Contract 5, text hygiene: the share of the round's prose answers that open with a stray
fragment (punctuation, a token fragment) or repeat degenerately. Pure.

The answers judged are every prose answer of the round (:mod:`canary.core.contracts.evidence`).
One odd answer proves nothing (generation is stochastic); the real case it catches is a host that
prefixed 19 of 20 answers with a stray fragment while its peers did so 0 times in 49. The first
look fails when at least ``SHARE`` of the answers, and at least 2, are unclean; the share was set
on measurements (``tests/bench/bench_detection.py``: tuned on some seeds, reported on others).
A failing first look is re-checked by two more language-probe answers, each unclean or not
(:func:`hygiene_look`); 2 of the 3 looks fail the contract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from canary.core.contracts.common import no_evidence, not_an_answer, sample_of
from canary.core.contracts.confirm import Recheck
from canary.core.contracts.evidence import PROSE
from canary.core.model import Contract, ContractResult, Observation, Result
from canary.text.hygiene import degenerate_repetition, leading_garbage

MIN_ANSWERS = 2
MIN_UNCLEAN = 2
SHARE = 0.4  # unclean answers / judged answers that fail the first look
_SAMPLE = 80


def unclean(text: str) -> tuple[str | None, str | None]:
    """(stray leading fragment, degenerate repetition) of one answer; both None when clean."""
    return leading_garbage(text), degenerate_repetition(text)


def judge_hygiene(
    answers: Sequence[Observation], observations: Sequence[Observation], share: float = SHARE
) -> ContractResult:
    """The first look over the round's prose ``answers``; ``observations`` holds every
    observation of the round (only transport errors among the prose probes: transport_error)."""
    prose = [o for o in observations if o.contract in PROSE]
    if prose and not any(o.completed for o in prose):
        return no_evidence(Contract.hygiene, prose)  # transport only: no evidence either way
    n = len(answers)
    if n < MIN_ANSWERS:
        return ContractResult(
            Contract.hygiene,
            Result.inconclusive,
            f"{n} prose answer{'s' if n != 1 else ''} to judge, need {MIN_ANSWERS}",
            reason="too_few_answers",
        )
    leading: list[tuple[Observation, str]] = []
    repeating: list[tuple[Observation, str]] = []
    flagged = 0
    for o in answers:
        garbage, repetition = unclean(o.content)
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
    failed = flagged >= MIN_UNCLEAN and flagged >= share * n
    rule = f"fails when {share:.0%} of the answers, and {MIN_UNCLEAN}, show it"
    if not parts:
        detail = f"clean start and no repetition in {n}/{n} answers"
    else:
        detail = "; ".join(parts) + ("" if failed else f" ({rule})")
    worst = (leading or repeating or [(answers[0], "")])[0][0]
    reason = None
    if failed:
        reason = "leading_garbage" if len(leading) >= len(repeating) else "degenerate_repetition"
    return ContractResult(
        Contract.hygiene,
        Result.fail if failed else Result.passed,
        detail,
        figure=flagged / n,
        sample=sample_of(worst.content, _SAMPLE),
        reason=reason,
    )


def hygiene_look(o: Observation, eligible: bool) -> Recheck:
    """One re-check answer: unclean (a stray opening or degenerate repetition) or clean."""
    if not o.completed:
        return not_an_answer(o)
    if not eligible:
        return Recheck(Result.inconclusive, "a refusal, empty or cut-short answer")
    garbage, repetition = unclean(o.content)
    if garbage is not None:
        return Recheck(Result.fail, f"stray leading fragment {garbage!r}")
    if repetition is not None:
        return Recheck(Result.fail, f"degenerate repetition: {repetition}")
    return Recheck(Result.passed, "clean")
