"""Contract 4, language integrity, judged on every prose answer of the round. Pure.

The analysis itself (lingua, sentence by sentence) is injected as ``analyze`` so the core stays
free of the detector; ``canary.text.detect.LanguageAnalyzer`` is the real one.

The first look reads each of the round's prose answers (:mod:`canary.core.contracts.evidence`:
the ttft samples, the refusal continuation, the language probe; not refusals, empty, filtered or
cut-short answers, nor JSON) and flags:

- an anomaly in any one answer: a foreign language takes over, mixes in, or replaces the expected
  one, or the encoding is broken (:mod:`canary.text.detect`);
- persistent mixing across answers: one foreign language confidently labelled (at least one
  sentence of it) in at least 2, and at least a third, of at least 3 judged answers
  (``language_mixing``), even at one foreign sentence per answer, which no single answer would
  show. A third, not half: a round's latency samples are a sentence or two each, so a host that
  mixes a third of its sentences leaves most of them clean; a clean host's sentence is rarely
  labelled foreign with confidence, and twice in one round almost never (the re-checks must
  still confirm it).

An answer with no labelled sentence ("too short or ambiguous") is not judged. A flag is confirmed
before it fails (:mod:`canary.core.contracts.confirm`): two more language-probe answers are sent
at once, and each fails its look when it is an anomaly itself or carries the foreign language the
first look found (:func:`language_look`); 2 of the 3 looks fail the contract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from canary.core.contracts.common import (
    FILTERED,
    FILTERED_WHY,
    is_filtered,
    no_evidence,
    not_an_answer,
    sample_of,
)
from canary.core.contracts.confirm import Recheck
from canary.core.model import Contract, ContractResult, Observation, Result

if TYPE_CHECKING:
    from canary.text.analysis import TextAnalysis

Analyze = Callable[[str, str], "TextAnalysis"]

MIN_JUDGED = 3  # persistent mixing needs at least this many judged answers
MIN_CARRIERS = 2  # ... one foreign language in at least this many of them
CARRIERS_PER = 3  # ... and in at least one of every this many
MIXING = "language_mixing"


@dataclass(frozen=True)
class Persistence:
    """A foreign language labelled in ``carriers`` of the ``judged`` answers."""

    language: str
    carriers: int
    judged: int

    def __str__(self) -> str:
        return f"{self.language} in {self.carriers}/{self.judged} judged answers"


@dataclass(frozen=True)
class LanguageFirstLook:
    result: ContractResult
    foreign: str | None  # the foreign language a re-check must carry to confirm the flag


def persistent_foreign(analyses: Sequence[TextAnalysis], expected: str) -> Persistence | None:
    """The foreign language labelled in at least 2, and a third, of at least 3 judged answers."""
    judged = [a for a in analyses if a.judged]
    if len(judged) < MIN_JUDGED:
        return None
    carriers = Counter(language for a in judged for language, _ in a.counts if language != expected)
    if not carriers:
        return None
    language, count = max(carriers.items(), key=lambda kv: (kv[1], kv[0]))
    persistent = count >= MIN_CARRIERS and count * CARRIERS_PER >= len(judged)
    return Persistence(language, count, len(judged)) if persistent else None


def judge_language(
    answers: Sequence[Observation],
    probe: Sequence[Observation],
    expected: str,
    analyze: Analyze,
) -> LanguageFirstLook:
    """The first look over the round's prose ``answers``; ``probe`` holds the language probe's
    own observations (nothing completed there and no answer elsewhere: a transport error)."""
    if not answers:
        if not any(o.completed for o in probe):
            missing = replace(no_evidence(Contract.language, probe), language=expected)
            return LanguageFirstLook(missing, None)
        if all(is_filtered(o) for o in probe if o.completed):
            filtered = ContractResult(
                Contract.language,
                Result.inconclusive,
                f"no answer to judge: the language probe's answer was {FILTERED_WHY}",
                reason=FILTERED,
                language=expected,
            )
            return LanguageFirstLook(filtered, None)
        return LanguageFirstLook(
            ContractResult(
                Contract.language,
                Result.inconclusive,
                "no answer to judge (refusals, empty or cut-short answers only)",
                reason="no_answer",
                language=expected,
            ),
            None,
        )
    analyses = [analyze(o.content, expected) for o in answers]
    anomalies = [(o, a) for o, a in zip(answers, analyses, strict=True) if a.anomaly]
    persistent = persistent_foreign(analyses, expected)
    n = len(analyses)
    judged = sum(1 for a in analyses if a.judged)
    if anomalies or persistent is not None:
        parts = []
        if anomalies:
            worst = anomalies[0][1]
            parts.append(f"{worst.reason} ({len(anomalies)}/{n} answers anomalous)")
        if persistent is not None:
            parts.append(f"{persistent} (persistent mixing)")
        if anomalies and anomalies[0][1].kind is not None:
            reason = str(anomalies[0][1].kind)
            foreign = anomalies[0][1].foreign_language
        else:
            reason, foreign = MIXING, None
        if persistent is not None:
            foreign = persistent.language
        shown = anomalies[0][0] if anomalies else _carrier(answers, analyses, foreign)
        return LanguageFirstLook(
            ContractResult(
                Contract.language,
                Result.fail,
                "; ".join(parts),
                figure=(len(anomalies) if persistent is None else persistent.carriers) / n,
                sample=sample_of(shown.content),
                reason=reason,
                language=expected,
                language_anomaly=True,
            ),
            foreign,
        )
    sample = sample_of(answers[0].content)
    ok = next((a for a in analyses if a.ok), None)
    if ok is not None:
        return LanguageFirstLook(
            ContractResult(
                Contract.language,
                Result.passed,
                f"no anomaly in {n} answer(s), {judged} judged; e.g. {ok.reason}",
                figure=0.0,
                sample=sample,
                language=expected,
            ),
            None,
        )
    return LanguageFirstLook(
        ContractResult(
            Contract.language,
            Result.inconclusive,
            analyses[0].reason,
            figure=0.0,
            sample=sample,
            reason="too_short_or_ambiguous",
            language=expected,
        ),
        None,
    )


def language_look(
    o: Observation, eligible: bool, expected: str, analyze: Analyze, foreign: str | None
) -> Recheck:
    """One re-check answer: it confirms the flag when it is an anomaly itself or carries the
    foreign language the first look found."""
    if not o.completed:
        return not_an_answer(o)
    if is_filtered(o):
        return Recheck(Result.inconclusive, FILTERED)
    if not eligible:
        return Recheck(Result.inconclusive, "a refusal, empty or cut-short answer")
    analysis = analyze(o.content, expected)
    if analysis.anomaly:
        return Recheck(Result.fail, analysis.reason)
    if foreign is not None and analysis.count(foreign):
        found = analysis.count(foreign)
        return Recheck(Result.fail, f"{foreign} in {found}/{len(analysis.sentences)} sentences")
    if analysis.ok:
        return Recheck(Result.passed, analysis.reason)
    return Recheck(Result.inconclusive, analysis.reason)


def _carrier(
    answers: Sequence[Observation], analyses: Sequence[TextAnalysis], foreign: str | None
) -> Observation:
    for o, a in zip(answers, analyses, strict=True):
        if foreign is not None and a.count(foreign):
            return o
    return answers[0]
