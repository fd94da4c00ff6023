"""Time to first token: no content within the threshold is a slow sample; most slow fails. Pure.

Rules, as decided for this contract:

- A sample is a completed answer whose first content delta arrived (``ttft_s`` set). It is slow
  when ``ttft_s > threshold_s``.
- A completed answer with no content at all is not a latency sample: an empty answer belongs to
  the refusal contract, and a reasoning model that spent its tokens thinking says nothing about
  the queue.
- A probe that timed out waiting for the first token is a transport ``timeout``, not a sample:
  transport problems are never quality evidence (they freeze the count).
- The contract fails only when more than half of the samples are slow (queues have bursts, so
  one slow answer never fails it), and is inconclusive with fewer than two samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from canary.core.contracts.common import completed, no_evidence, sample_of
from canary.core.model import Contract, ContractResult, Observation, Result

MIN_SAMPLES = 2


def judge_ttft(observations: Sequence[Observation], threshold_s: float) -> ContractResult:
    done = completed(observations)
    if not done:
        return no_evidence(Contract.ttft, observations)
    language = done[0].language
    samples = [o.ttft_s for o in done if o.ttft_s is not None]
    sample = next((sample_of(o.content) for o in done if o.content), "")
    rule = f"{_secs(threshold_s)} s"
    if not samples:
        return ContractResult(
            Contract.ttft,
            Result.inconclusive,
            f"no latency sample: {len(done)} completed answer(s) carried no content",
            reason="no_sample",
            language=language,
        )
    slow = sum(1 for t in samples if t > threshold_s)
    median = statistics.median(samples)
    figures = f"{slow}/{len(samples)} samples over {rule} (median {median:.1f} s)"
    skipped = len(observations) - len(samples)
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
            reason="slow",
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


def _secs(value: float) -> str:
    return f"{value:g}"
