"""The language contract on the real corpus, served by the simulator (issue 3 "Done when").

A text bank is built from the shared corpus: one passage per line, each made of corpus sentences
of that language. Corpus lines with encoding damage (none since the shared corpus was repaired;
an upstream copy has French U+0092 apostrophes and double-encoded lines) are dropped by
``canary.text.corpus.load_sentences``: they would rightly be flagged as corruption, so they cannot
stand for healthy answers. Only lines that end a
sentence are used, so that the sentence boundaries stay visible inside a one-line passage.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from canary.config.probe_set import ProbeSet
from canary.core.model import Contract, EndpointState, Result
from canary.openrouter.client import OpenRouterClient
from canary.rounds.prober import EndpointProbing, Prober
from canary.sim.text import split_sentences
from canary.text.corpus import load_sentences
from canary.text.detect import LanguageAnalyzer

FINAL = tuple('.!?…。！？؟"”»)')  # what ends a sentence (as canary.text.corpus.compose)
SENTENCES_PER_PASSAGE = 2  # the simulator serves 2 or 3 passages: 4 to 6 corpus sentences


@dataclass(frozen=True)
class BankStats:
    language: str
    lines: int  # corpus lines
    damaged: int  # dropped for real encoding corruption
    unfinished: int  # dropped: no sentence-final punctuation
    passages: int


@dataclass
class Tally:
    language: str
    probes: int = 0
    fails: int = 0
    inconclusive: int = 0
    transport: int = 0
    rechecked: int = 0  # first answer was an anomaly: two re-checks were sent
    seconds: float = 0.0
    sample: str = ""  # the detail of one failure, to show
    answer: str = ""  # the first language answer, as served

    @property
    def false_failure_rate(self) -> float:
        return self.fails / self.probes if self.probes else 0.0


def build_text_bank(
    corpus: Path, target: Path, languages: Sequence[str], seed: int = 0
) -> list[BankStats]:
    """Write ``<lang>.txt`` passages from the corpus into ``target``; return what was kept."""
    target.mkdir(parents=True, exist_ok=True)
    stats = []
    for lang in languages:
        raw = load_sentences(corpus, lang, clean=False)
        clean = load_sentences(corpus, lang)
        finished = [line for line in clean if line.endswith(FINAL)]
        random.Random(f"{seed}-{lang}").shuffle(finished)
        size = SENTENCES_PER_PASSAGE
        joiner = "" if lang in ("ja", "zh") else " "
        passages = [
            joiner.join(finished[i : i + size]) for i in range(0, len(finished) - size + 1, size)
        ]
        (target / f"{lang}.txt").write_text("\n".join(passages) + "\n", encoding="utf-8")
        stats.append(
            BankStats(
                lang, len(raw), len(raw) - len(clean), len(clean) - len(finished), len(passages)
            )  # fmt: skip
        )
    return stats


def healthy_scenario(model: str, text_bank: Path, endpoints: int = 4) -> dict[str, object]:
    """Fast, healthy endpoints (no structured outputs or tools: only text probes are sent)."""
    providers = [
        {
            "tag": f"host-{i}",
            "name": f"Host {i}",
            "ttft_ms": 2,
            "tokens_per_second": 20000,
            "supported_parameters": ["max_tokens"],
        }
        for i in range(1, endpoints + 1)
    ]
    return {
        "seed": 17,
        "text_bank": str(text_bank),
        "models": [{"id": model, "providers": providers}],
    }


async def _probe_language(
    base_url: str,
    model: str,
    language: str,
    n: int,
    probes: ProbeSet,
    analyzer: LanguageAnalyzer,
    tags: Sequence[str] | None,
) -> tuple[list[EndpointProbing], float]:
    async with OpenRouterClient(base_url, "sk-e2e", max_connections=64) as client:
        endpoints = [e for e in await client.list_endpoints(model) if tags is None or e.tag in tags]
        prober = Prober(
            client,
            probes,
            analyzer.analyze,
            languages=analyzer.languages,
            ttft_threshold_s=10.0,
            ttft_samples=1,  # the language contract is what is measured here
            max_tokens=400,
            concurrency=48,
            per_provider_concurrency=16,
        )
        started = time.perf_counter()
        runs = [
            prober.probe_endpoint(
                e, prober.plan(e, EndpointState(model, e.tag, next_language=language), i)
            )
            for i in range(n)
            for e in [endpoints[i % len(endpoints)]]
        ]
        probings = list(await asyncio.gather(*runs))
        return probings, time.perf_counter() - started


def probe_language(
    base_url: str,
    model: str,
    language: str,
    n: int,
    *,
    probes: ProbeSet,
    analyzer: LanguageAnalyzer,
    tags: Sequence[str] | None = None,
) -> Tally:
    """``n`` probes of ``language`` through the real Prober (2-of-3 re-check included)."""
    probings, seconds = asyncio.run(
        _probe_language(base_url, model, language, n, probes, analyzer, tags)
    )
    tally = Tally(language, probes=len(probings), seconds=seconds)
    for p in probings:
        judged = next(r for r in p.results if r.contract is Contract.language)
        attempts = [o for o in p.observations if o.contract is Contract.language]
        tally.rechecked += len(attempts) > 1
        tally.answer = tally.answer or attempts[0].content
        if judged.result is Result.fail:
            tally.fails += 1
            tally.sample = tally.sample or f"{judged.detail}: {judged.sample}"
        elif judged.result is Result.inconclusive:
            tally.inconclusive += 1
        elif judged.result is Result.transport_error:
            tally.transport += 1
    return tally


def whole_sentences(corpus: Path, language: str) -> list[str]:
    """Corpus lines that are one ordinary sentence (60-160 characters, ending with a period)."""
    return [
        line
        for line in load_sentences(corpus, language)
        if line.endswith(".")
        and 60 <= len(line) <= 160
        and len(split_sentences(line, language)) == 1
    ]


def portuguese_bank(corpus: Path, target: Path, offset: int = 0) -> Path:
    """pt.txt holds exactly 2 passages of 3 sentences: the simulator serves 2 or 3 passages,
    so every Portuguese answer is these 6 sentences, and a `language_mix` share of 0.34
    replaces round(0.34 * 6) = 2 of them with sentences of es.txt (whole Spanish sentences)."""
    pt = whole_sentences(corpus, "pt")[offset : offset + 6]
    target.mkdir(parents=True, exist_ok=True)
    passages = [" ".join(pt[0:3]), " ".join(pt[3:6])]
    assert all(len(split_sentences(p, "pt")) == 3 for p in passages)
    (target / "pt.txt").write_text("\n".join(passages) + "\n", encoding="utf-8")
    (target / "es.txt").write_text(
        "\n".join(whole_sentences(corpus, "es")) + "\n", encoding="utf-8"
    )
    return target
