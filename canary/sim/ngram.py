"""The simulator's model for the equality prompts: a real distribution, so that identical
providers are exchangeable and the equality faults shift it measurably.

A word trigram sampler built from text inside the repository (the English text bank; the
``substituted`` fault's from ``substitute.txt``), interpolated with bigram and unigram
frequencies, and sampled at a temperature: each step's probabilities raised to ``1 / T``.
Story prompts ("Continue the story ...: opening") are continued from their last two words; known-answer prompts
(sums, copying) are answered right, unless the template is broken (the instruction ignored).
"""

from __future__ import annotations

import random
import re
from bisect import bisect
from collections import Counter
from functools import cache
from itertools import accumulate
from pathlib import Path

from canary.sim.text import BUILTIN_BANK

_STORY = re.compile(r"^Continue the story[^:\n]*:\s*(?P<opening>.+)$", re.DOTALL)
_SUM = re.compile(r"What is (\d+) plus (\d+)\?")
_COPY = re.compile(r"Repeat exactly[^:\n]*:\s*(?P<text>.+)$", re.DOTALL)
SUBSTITUTE = Path(__file__).resolve().parent / "substitute.txt"
ANSWER_WORDS = 30  # a completion's words, at most (and max_tokens)
MIX = (0.6, 0.3, 0.1)  # the weights of the trigram, bigram and unigram distributions
_COMMON = 60  # the unigram part draws from this many most common words

Table = tuple[tuple[str, ...], tuple[float, ...]]  # words, cumulative weights


class NGram:
    def __init__(self, text: str) -> None:
        words = text.split()
        self.unigram = Counter(words)
        self.bigram: dict[str, Counter[str]] = {}
        self.trigram: dict[tuple[str, str], Counter[str]] = {}
        for a, b, c in zip(words, words[1:], words[2:], strict=False):
            self.bigram.setdefault(b, Counter())[c] += 1
            self.trigram.setdefault((a, b), Counter())[c] += 1
        self.common = dict(self.unigram.most_common(_COMMON))
        self._tables: dict[tuple[str, str, float], Table] = {}

    def table(self, a: str, b: str, temperature: float) -> Table:
        """The next word's distribution after ``a b``, at ``temperature``."""
        trigram = self.trigram.get((a, b))
        key = (a if trigram else "", b, temperature)  # without a trigram, ``a`` changes nothing
        if (found := self._tables.get(key)) is not None:
            return found
        parts = [
            (weight, counts)
            for weight, counts in zip(MIX, (trigram, self.bigram.get(b), self.common), strict=True)
            if counts
        ]
        total = sum(weight for weight, _ in parts)
        p: dict[str, float] = {}
        for weight, counts in parts:
            n = sum(counts.values())
            for word, count in counts.items():
                p[word] = p.get(word, 0.0) + weight / total * count / n
        words = tuple(sorted(p))
        top = max(p.values())
        weights = tuple(accumulate((p[w] / top) ** (1 / temperature) for w in words))
        self._tables[key] = (words, weights)
        return words, weights

    def sample(self, opening: str, length: int, temperature: float, rng: random.Random) -> str:
        """``length`` words continuing ``opening`` (its last two words are the context)."""
        context = opening.split()[-2:]
        a, b = ([""] * (2 - len(context)) + context)[-2:]
        out: list[str] = []
        for _ in range(length):
            words, cumulative = self.table(a, b, temperature)
            word = words[bisect(cumulative, rng.random() * cumulative[-1])]
            out.append(word)
            a, b = b, word
        return " ".join(out)


@cache
def model_of(substituted: bool) -> NGram:
    """The scenario's model (the English text bank) or the substitute's."""
    path = SUBSTITUTE if substituted else BUILTIN_BANK / "en.txt"
    return NGram(path.read_text(encoding="utf-8"))


def equality_answer(
    prompt: str,
    temperature: float,
    rng: random.Random,
    *,
    quantized: float = 1.0,
    substituted: bool = False,
    template_broken: bool = False,
    length: int = ANSWER_WORDS,
) -> str | None:
    """The answer to an equality prompt, or None for any other prompt.

    ``quantized``: the sampler's temperature as a share of the one asked for (0.8: sharper);
    ``template_broken``: the instruction is lost, so the model rambles from the start of a
    text, and known-answer items are not answered."""
    model = model_of(substituted)
    story = _STORY.match(prompt)
    if story is None and template_broken and (_SUM.search(prompt) or _COPY.search(prompt)):
        return model.sample("", min(length, 8), max(temperature, 0.1), rng)
    if (found := _SUM.search(prompt)) is not None:
        return str(int(found[1]) + int(found[2]))
    if (copied := _COPY.search(prompt)) is not None:
        return copied["text"].strip()
    if story is None:
        return None
    opening = "" if template_broken else story["opening"]
    return model.sample(opening, length, max(temperature * quantized, 0.05), rng)
