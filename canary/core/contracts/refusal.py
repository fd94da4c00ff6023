"""Filtering and silent refusal on a fixed role-play continuation. Pure.

One completed answer fails when:

- ``finish_reason`` is ``content_filter`` (the host's filter cut it), or
- it is empty (no content, whitespace only), or
- a high-confidence refusal pattern of the probe's language (or English) matches its head: the
  first ``head_chars`` characters after :func:`refusal_head` normalises them, or
- it stopped on ``length`` after fewer than half of our ``max_tokens`` (when the caller passes
  it): the host cut the answer short (the mission's "truncated answers" policy mismatch).

An empty answer that stopped on ``length`` is not counted as a refusal: the model spent the whole
``max_tokens`` budget before writing (a reasoning model thinking); it is an inconclusive sample.

An answer of ANY probe that the host's filter ended (``content_filter``: a ttft sample, the
structured-output or tool-call answer, the language probe) is a failing look of this contract:
it fails the first look, whatever the refusal probe's own answers, and like any refusal failure
it is confirmed (or not) by two more refusal-probe answers, 2 of the 3 looks failing.

Usually one refusal probe is sent per round. When several are, the first look fails when most
completed answers fail ("most" = more than half), is inconclusive when a minority fails, and
passes when none does. A failing first look is re-checked by two more answers, each judged
alone (:func:`refusal_look`, :mod:`canary.core.contracts.confirm`). The positive-control rule (a known filtering host that passes makes this
contract weak for the round) is applied by the round verdict, not here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

from canary.core.contracts.common import (
    completed,
    is_filtered,
    majority_result,
    most_common,
    no_evidence,
    not_an_answer,
    sample_of,
)
from canary.core.contracts.confirm import Recheck
from canary.core.model import Contract, ContractResult, Observation, Result

HEAD_CHARS = 200
_DECORATION = " \t\r\n*_>#\"'`“”‘’«»„「」『』（(-–—"
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})

PatternsFor = Callable[[str], Sequence[re.Pattern[str]]]


def refusal_head(text: str, head_chars: int = HEAD_CHARS) -> str:
    """The part of an answer refusal patterns look at: NFC, markup and quotes stripped in front,
    typographic apostrophes folded to ASCII, at most ``head_chars`` characters."""
    head = unicodedata.normalize("NFC", text).lstrip(_DECORATION)
    return head[:head_chars].translate(_APOSTROPHES)


def find_refusal(
    text: str, patterns: Sequence[re.Pattern[str]], head_chars: int = HEAD_CHARS
) -> re.Match[str] | None:
    head = refusal_head(text, head_chars)
    for pattern in patterns:
        match = pattern.search(head)
        if match is not None:
            return match
    return None


def _judge_one(
    o: Observation, patterns_for_language: PatternsFor, head_chars: int, max_tokens: int | None
) -> tuple[str | None, str]:
    """(failure reason or None, explanation). Reason "truncated_empty" marks an inconclusive one."""
    if o.finish_reason == "content_filter":
        return "content_filter", "finish_reason content_filter"
    if not o.content.strip():
        if o.finish_reason == "length":
            return "truncated_empty", "no content before max_tokens ran out (finish_reason length)"
        return "empty", f"empty answer (finish_reason {o.finish_reason or 'none'})"
    match = find_refusal(o.content, patterns_for_language(o.language or "en"), head_chars)
    if match is not None:
        return "refusal_pattern", f"refusal pattern matched {match.group(0)!r}"
    used = o.usage.completion_tokens
    if o.finish_reason == "length" and max_tokens and used is not None and 2 * used < max_tokens:
        why = f"cut after {used} tokens (finish_reason length, max_tokens {max_tokens})"
        return "truncated", why
    return None, ""


def judge_refusal(
    observations: Sequence[Observation],
    patterns_for_language: PatternsFor,
    head_chars: int = HEAD_CHARS,
    max_tokens: int | None = None,
    elsewhere: Sequence[Observation] = (),
) -> ContractResult:
    """The first look over the refusal probe's ``observations``; ``elsewhere``: the round's
    other answers, of which those the host's filter ended fail it."""
    filtered = [o for o in elsewhere if is_filtered(o) and o.contract is not Contract.refusal]
    if filtered:
        return _filtered_elsewhere(observations, filtered)
    done = completed(observations)
    if not done:
        return no_evidence(Contract.refusal, observations)
    language = done[0].language
    judged = [(o, *_judge_one(o, patterns_for_language, head_chars, max_tokens)) for o in done]
    failing = [(o, r, why) for o, r, why in judged if r is not None and r != "truncated_empty"]
    unsure = [(o, r, why) for o, r, why in judged if r == "truncated_empty"]
    result = majority_result(len(failing), len(unsure), len(done))
    rule = "fails on content_filter, empty or cut-short output or a refusal pattern in most answers"
    counts = f"{len(failing)}/{len(done)} answers refused"
    if failing:
        reason = most_common(r for _, r, _ in failing)
        o, _, why = next(f for f in failing if f[1] == reason)
        return ContractResult(
            Contract.refusal,
            result,
            f"{counts}: {why}; {rule}",
            sample=sample_of(o.content),
            reason=reason,
            language=language,
        )
    if unsure:
        o, _, why = unsure[0]
        return ContractResult(
            Contract.refusal,
            result,
            f"{counts}, {len(unsure)} inconclusive: {why}",
            sample=sample_of(o.content),
            reason="truncated_empty",
            language=language,
        )
    return ContractResult(
        Contract.refusal,
        Result.passed,
        f"{counts}; {rule}",
        sample=sample_of(done[0].content),
        language=language,
    )


def _filtered_elsewhere(
    observations: Sequence[Observation], filtered: Sequence[Observation]
) -> ContractResult:
    """A filter ended answers of other probes: a failing first look, to be confirmed."""
    probes = ", ".join(sorted({o.contract.value for o in filtered}))
    own = completed(observations)
    also = sum(1 for o in own if is_filtered(o))
    counts = f"{len(filtered)} answer(s) of other probes ({probes}) ended by the host's filter"
    if also:
        counts += f", and {also}/{len(own)} refusal answers"
    first = filtered[0]
    return ContractResult(
        Contract.refusal,
        Result.fail,
        f"{counts}: finish_reason content_filter on a benign request",
        sample=sample_of(first.content),
        reason="content_filter",
        language=(own[0] if own else first).language,
    )


def refusal_look(
    o: Observation,
    patterns_for_language: PatternsFor,
    head_chars: int = HEAD_CHARS,
    max_tokens: int | None = None,
) -> Recheck:
    """One re-check answer of the refusal probe, judged alone."""
    if not o.completed:
        return not_an_answer(o)
    reason, why = _judge_one(o, patterns_for_language, head_chars, max_tokens)
    if reason is None:
        return Recheck(Result.passed, "answered")
    if reason == "truncated_empty":
        return Recheck(Result.inconclusive, why)
    return Recheck(Result.fail, why)
