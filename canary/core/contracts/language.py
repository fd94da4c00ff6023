"""Contract 4, language integrity: an anomaly is re-checked twice at once and fails on 2 of 3.

The analysis itself (lingua, sentence by sentence) is injected as ``analyze`` so the core stays
free of the detector; ``canary.text.detect.LanguageAnalyzer`` is the real one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from canary.core.model import Contract, ContractResult, Observation, Result

if TYPE_CHECKING:
    from canary.text.analysis import TextAnalysis

Analyze = Callable[[str, str], "TextAnalysis"]

CHECKS = 3  # the first answer and, after an anomaly, two re-checks sent at once
FAIL_AT = 2  # anomalies among the checks that make the contract fail
_SAMPLE = 120


def needs_recheck(observation: Observation, expected: str, analyze: Analyze) -> bool:
    """True when this first answer is an anomaly: the runner then sends two re-checks at once."""
    return observation.completed and analyze(observation.content, expected).anomaly


def judge_language(
    observations: Sequence[Observation], expected: str, analyze: Analyze
) -> ContractResult:
    """Judge up to three answers of one endpoint's language probe (the first, then re-checks)."""
    completed = [o for o in observations if o.completed][:CHECKS]
    if not completed:
        causes = {
            str(o.transport) if o.attribution_ok else "attribution_mismatch" for o in observations
        }
        why = ", ".join(sorted(causes)) or "no observation"
        return ContractResult(
            Contract.language,
            Result.transport_error,
            f"no completed answer ({why})",
            language=expected,
        )
    analyses = [analyze(o.content, expected) for o in completed]
    flagged = [(o, a) for o, a in zip(completed, analyses, strict=True) if a.anomaly]
    oks = sum(a.ok for a in analyses)
    checks = f"{len(flagged)}/{len(analyses)} checks"
    if flagged:
        observation, worst = flagged[0]
        kind = str(worst.kind) if worst.kind is not None else None
        if len(flagged) >= FAIL_AT:
            result, rule = Result.fail, f"fails when {FAIL_AT} of {CHECKS} checks show it"
        elif oks >= CHECKS - 1:
            result, rule = Result.passed, "not confirmed by the re-checks"
        else:
            result, rule = Result.inconclusive, "re-checks inconclusive or missing"
        return ContractResult(
            Contract.language,
            result,
            f"{worst.reason} ({checks}; {rule})",
            figure=float(len(flagged)),
            sample=_sample(observation.content),
            reason=kind,
            language=expected,
            language_anomaly=True,
        )
    sample = _sample(completed[0].content)
    if oks:
        ok = next(a for a in analyses if a.ok)
        return ContractResult(
            Contract.language,
            Result.passed,
            ok.reason,
            figure=0.0,
            sample=sample,
            language=expected,
        )
    return ContractResult(
        Contract.language,
        Result.inconclusive,
        analyses[0].reason,
        figure=0.0,
        sample=sample,
        reason="too_short_or_ambiguous",
        language=expected,
    )


def _sample(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SAMPLE else flat[: _SAMPLE - 1] + "…"
