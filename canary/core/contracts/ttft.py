"""Time to first token: no content within the threshold is a slow sample; most slow fails. Pure.

Rules, as decided for this contract:

- A sample is a completed answer of a ttft probe whose first content delta arrived (``ttft_s``
  set). It is slow when ``ttft_s > threshold_s``.
- A stall is slowness, not a transport error: a stream that opened (HTTP 200) but sent no token
  within the first-token timeout, on *any* probe of the round, is one slow sample counted at that
  timeout (censored: the real time is longer). It is slow whatever that value: with the timeout
  equal to the threshold, a stall recorded at exactly the threshold is still slow (the answer
  never came). Its own probe's contract sees a transport timeout.
- A completed answer with no content at all is not a latency sample: an empty answer belongs to
  the refusal contract, and a reasoning model that spent its tokens thinking says nothing about
  the queue. An answer the host's filter ended keeps its timing as a sample (its first token
  came when it came); one that ended before any content is no sample (reason ``filtered``).
- A probe that timed out before its stream opened (no status line) is a transport ``timeout``,
  not a sample: transport problems are never quality evidence (they freeze the count).
- The first look fails only when more than half of the samples are slow (queues have bursts, so
  one slow answer never fails it), and is inconclusive with fewer than two samples. A failing
  first look is re-checked (:mod:`canary.core.contracts.confirm`): each re-check answer is slow
  or not (:func:`ttft_look`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from canary.core.contracts.common import (
    FILTERED,
    completed,
    is_filtered,
    no_evidence,
    not_an_answer,
    sample_of,
)
from canary.core.contracts.confirm import Recheck
from canary.core.model import Contract, ContractResult, Observation, Result

MIN_SAMPLES = 2


def stalls(observations: Sequence[Observation]) -> list[Observation]:
    """The observations of any probe whose open stream sent no token in time (censored ttft)."""
    return [
        o for o in observations if o.ttft_censored and o.attribution_ok and o.ttft_s is not None
    ]


def judge_ttft(observations: Sequence[Observation], threshold_s: float) -> ContractResult:
    """The first look over a round's observations: the ttft probes' samples and every stall."""
    own = [o for o in observations if o.contract is Contract.ttft]
    stalled = stalls(observations)
    done = completed(own)
    if not done and not stalled:
        return no_evidence(Contract.ttft, own)
    language = (done or stalled)[0].language
    measured = [o.ttft_s for o in done if o.ttft_s is not None]
    samples = measured + [o.ttft_s for o in stalled if o.ttft_s is not None]
    sample = next((sample_of(o.content) for o in done if o.content), "")
    rule = f"{_secs(threshold_s)} s"
    if not samples:
        filtered = done and all(is_filtered(o) for o in done)
        return ContractResult(
            Contract.ttft,
            Result.inconclusive,
            f"no latency sample: {len(done)} completed answer(s) carried no content"
            + (", ended by the host's filter" if filtered else ""),
            reason=FILTERED if filtered else "no_sample",
            language=language,
        )
    # a censored sample is slow unconditionally: its true time is beyond the value recorded
    slow = sum(1 for t in measured if t > threshold_s) + len(stalled)
    median = statistics.median(samples)
    figures = f"{slow}/{len(samples)} samples over {rule} (median {median:.1f} s)"
    if stalled:
        at = max(o.ttft_s or 0.0 for o in stalled)
        figures += f"; {len(stalled)} stalled (stream open, no token), counted at {_secs(at)} s"
    skipped = len(own) - len(measured) - sum(o.contract is Contract.ttft for o in stalled)
    if skipped:
        figures += f"; {skipped} probe(s) not sampled"
    if len(samples) < MIN_SAMPLES:
        return ContractResult(
            Contract.ttft,
            Result.inconclusive,
            f"{figures}: fewer than {MIN_SAMPLES} samples",
            figure=median,
            sample=sample,
            reason="too_few_samples",
            language=language,
        )
    if slow * 2 > len(samples):
        return ContractResult(
            Contract.ttft,
            Result.fail,
            f"{figures}: most samples slow",
            figure=median,
            sample=sample,
            reason="stalled" if len(stalled) * 2 > len(samples) else "slow",
            language=language,
        )
    return ContractResult(
        Contract.ttft,
        Result.passed,
        f"{figures}: fails only when most are slow",
        figure=median,
        sample=sample,
        language=language,
    )


def ttft_look(o: Observation, threshold_s: float) -> Recheck:
    """One re-check answer of the ttft probe: slow (or stalled), fast, or not a sample."""
    if o.ttft_censored and o.ttft_s is not None:
        return Recheck(Result.fail, f"stalled, no token within {_secs(o.ttft_s)} s")
    if o.completed and o.ttft_s is not None:
        verdict = Result.fail if o.ttft_s > threshold_s else Result.passed
        return Recheck(verdict, f"{o.ttft_s:.1f} s")
    if o.completed:
        return Recheck(Result.inconclusive, FILTERED if is_filtered(o) else "no content")
    return not_an_answer(o)


def _secs(value: float) -> str:
    return f"{value:g}"
