"""CPU cost of judging one answer: language analysis (lingua) plus the hygiene checks.

Answers are 4-6 random sentences of the shared corpus per language (seeded). Each answer is
timed on its own with time.process_time (CPU, not wall clock), with the analysis cache off.
The machine is shared: the load average is printed beside the figures.

    .venv/bin/python tests/bench/bench_judge.py [--n 300] [--seed 11]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

from canary.config.settings import SUPPORTED_LANGUAGES
from canary.text.corpus import compose, load_sentences
from canary.text.detect import LanguageAnalyzer
from canary.text.hygiene import degenerate_repetition, leading_garbage

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
TARGET_MS = 2.0


def judge_once(analyzer: LanguageAnalyzer, text: str, language: str) -> float:
    """CPU milliseconds to judge ``text``: language analysis and both hygiene checks."""
    started = time.process_time()
    analyzer.analyze(text, language)
    leading_garbage(text)
    degenerate_repetition(text)
    return (time.process_time() - started) * 1000


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="answers per language")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    analyzer = LanguageAnalyzer(SUPPORTED_LANGUAGES, cache_size=0)
    started = time.process_time()
    analyzer.warm()
    print(f"detectors loaded in {time.process_time() - started:.1f} s CPU (once per process)")
    answers: dict[str, list[str]] = {}
    for lang in SUPPORTED_LANGUAGES:
        pool = load_sentences(CORPUS, lang)
        rng = random.Random(f"{args.seed}-{lang}")
        answers[lang] = [compose(rng.sample(pool, rng.randint(4, 6))) for _ in range(args.n)]
    for lang in SUPPORTED_LANGUAGES[:3]:  # warm caches and code paths
        for text in answers[lang][:20]:
            judge_once(analyzer, text, lang)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{'lang':<5}{'chars':>7}{'mean ms':>9}{'p50 ms':>8}{'p99 ms':>8}")
    everything: list[float] = []
    for lang in SUPPORTED_LANGUAGES:
        times = [judge_once(analyzer, text, lang) for text in answers[lang]]
        everything += times
        chars = statistics.mean(len(t) for t in answers[lang])
        print(
            f"{lang:<5}{chars:>7.0f}{statistics.mean(times):>9.3f}{statistics.median(times):>8.3f}{p99(times):>8.3f}"
        )
    mean = statistics.mean(everything)
    print(
        f"{'all':<5}{'':>7}{mean:>9.3f}{statistics.median(everything):>8.3f}{p99(everything):>8.3f}"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"mean {mean:.3f} ms per answer (target < {TARGET_MS} ms): "
        f"{'met' if mean < TARGET_MS else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
