"""False failures and detection rates of the language contract on the shared corpus.

Each simulated probe answers with 4-6 random corpus sentences of one language (seeded). The
first answer is judged (canary.core.contracts.language.judge_language); when it fails, two
re-checks are drawn and the probe fails when they confirm it (canary.core.contracts.confirm).
Mixes splice sentences of a second language into every answer of the probe (the defect follows
the endpoint), so their rate is the share of probes that fail.

    .venv/bin/python tests/bench/bench_language.py [--n 1000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.confirm import confirm
from canary.core.contracts.language import judge_language, language_look
from canary.core.model import Contract, Observation, Result, Transport
from canary.text.corpus import compose, load_sentences
from canary.text.detect import LanguageAnalyzer, TextAnalysis

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"

Answer = Callable[[random.Random], str]


def observation(text: str, language: str, attempt: int) -> Observation:
    return Observation(
        contract=Contract.language, tag="bench", transport=Transport.ok,
        language=language, attempt=attempt, content=text,
    )  # fmt: skip


def probe(
    answer: Answer, language: str, rng: random.Random, analyze: LanguageAnalyzer
) -> tuple[Result, TextAnalysis]:
    """One probe under the runner's re-check rule: the contract result and the first analysis."""
    first_text = answer(rng)
    first = analyze(first_text, language)
    answers = [observation(first_text, language, 1)]
    look = judge_language(answers, answers, language, analyze)
    rechecks = []
    if look.result.result is Result.fail:
        rechecks = [observation(answer(rng), language, n) for n in (2, 3)]
    looks = [language_look(o, True, language, analyze, look.foreign) for o in rechecks]
    return confirm(look.result, looks).result, first


def clean_answer(pool: list[str]) -> Answer:
    return lambda rng: compose(rng.sample(pool, rng.randint(4, 6)))


def spliced(
    base: list[str], other: list[str], total: int, foreign: int, *, scattered: bool
) -> Answer:
    def answer(rng: random.Random) -> str:
        lines = rng.sample(base, total - foreign)
        extra = rng.sample(other, foreign)
        if scattered:
            for line in extra:
                lines.insert(rng.randint(1, len(lines)), line)
            return compose(lines)
        return compose(lines + extra)

    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="probes per language")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    analyze = LanguageAnalyzer(SUPPORTED_LANGUAGES)
    started = time.process_time()
    analyze.warm()
    print(f"detectors loaded in {time.process_time() - started:.1f} s CPU")
    pools = {lang: load_sentences(CORPUS, lang) for lang in SUPPORTED_LANGUAGES}

    print(f"\nClean answers: {args.n} probes per language, 4-6 corpus sentences each")
    print(
        f"{'lang':<5}{'lines':>6}{'1st anomaly':>13}{'inconcl.':>10}{'fails':>7}"
        f"{'false fail %':>14}"
    )
    worst = 0.0
    for lang in SUPPORTED_LANGUAGES:
        rng = random.Random(f"{args.seed}-{lang}")
        anomalies = inconclusive = fails = 0
        for _ in range(args.n):
            result, first = probe(clean_answer(pools[lang]), lang, rng, analyze)
            anomalies += first.anomaly
            inconclusive += result is Result.inconclusive
            fails += result is Result.fail
        rate = 100 * fails / args.n
        worst = max(worst, rate)
        print(
            f"{lang:<5}{len(pools[lang]):>6}{anomalies:>13}{inconclusive:>10}{fails:>7}{rate:>13.2f}%"
        )
    print(f"worst language: {worst:.2f} % false failures (target < 0.5 %)")

    print("\nThe same with the corpus's damaged lines left in (they are real encoding corruption)")
    for lang in ("fr", "de", "pl", "tr"):
        raw = load_sentences(CORPUS, lang, clean=False)
        rng = random.Random(f"{args.seed}-raw-{lang}")
        fails = sum(
            probe(clean_answer(raw), lang, rng, analyze)[0] is Result.fail for _ in range(args.n)
        )
        damaged = len(raw) - len(pools[lang])
        print(f"{lang:<5}{damaged:>4} damaged lines: {100 * fails / args.n:.2f}% of probes fail")

    mixes = [
        ("pt", "es", 6, 2, False), ("pt", "es", 6, 2, True), ("pt", "es", 6, 1, False),
        ("es", "pt", 6, 2, False), ("de", "en", 6, 2, False), ("de", "en", 6, 3, False),
        ("fr", "en", 6, 2, True), ("it", "es", 6, 2, False), ("ru", "uk", 6, 2, False),
        ("uk", "ru", 6, 2, False), ("id", "en", 6, 2, False), ("ja", "zh", 6, 2, False),
        ("ko", "zh", 6, 2, False), ("tr", "en", 6, 2, True), ("vi", "en", 6, 2, False),
        ("en", "es", 6, 6, False),
    ]  # fmt: skip
    n_mix = max(args.n // 5, 50)
    print(f"\nMixed answers: {n_mix} probes each, every answer of the probe spliced")
    print(f"{'mix':<24}{'1st anomaly %':>15}{'probe fails %':>15}")
    for base, other, total, foreign, scattered in mixes:
        rng = random.Random(f"{args.seed}-{base}-{other}-{foreign}-{scattered}")
        answer = spliced(pools[base], pools[other], total, foreign, scattered=scattered)
        firsts = fails = 0
        for _ in range(n_mix):
            result, first = probe(answer, base, rng, analyze)
            firsts += first.anomaly
            fails += result is Result.fail
        where = "scattered" if scattered else "at the end"
        label = f"{base}+{other} {foreign}/{total} {where}"
        print(f"{label:<24}{100 * firsts / n_mix:>14.1f}%{100 * fails / n_mix:>14.1f}%")

    damaged = [line for line in load_sentences(CORPUS, "fr", clean=False) if "\u0092" in line]
    if not damaged:
        print("\nfr: the corpus has no U+0092 line left (repaired): nothing to flag")
        return 0
    rng = random.Random(args.seed)
    caught = 0
    for _ in range(n_mix):
        lines = rng.sample(pools["fr"], 4) + [rng.choice(damaged)]
        caught += analyze(compose(lines), "fr").corruption is not None
    print(
        "\nfr answers with one U+0092 line (the corpus's own cp1252 residue): "
        f"{100 * caught / n_mix:.1f}% flagged"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
