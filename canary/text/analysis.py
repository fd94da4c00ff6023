"""The outcome of analysing one answer's language: pure data, no detector (the core may use it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

UNKNOWN = "unknown"


class TextVerdict(StrEnum):
    ok = "ok"
    anomaly = "anomaly"
    inconclusive = "inconclusive"  # too short or too ambiguous to say


class Anomaly(StrEnum):
    """Why an answer is an anomaly (also the contract result's machine-readable reason)."""

    encoding_corruption = "encoding_corruption"
    language_switch = "language_switch"  # a foreign language takes over (>= 2 sentences in a row)
    language_mixing = "language_mixing"  # a foreign language keeps coming back
    wrong_language = "wrong_language"  # nothing in the expected language, plenty in another


@dataclass(frozen=True)
class SentenceLanguage:
    text: str
    weight: int
    language: str  # ISO 639-1 code, or "unknown"
    margin: float  # top confidence minus the runner-up (0 when too short to judge)


@dataclass(frozen=True)
class TextAnalysis:
    expected: str
    verdict: TextVerdict
    reason: str  # "es in 2/6 sentences of a pt answer", "encoding corruption: U+FFFD x2", ...
    sentences: tuple[SentenceLanguage, ...]
    counts: tuple[tuple[str, int], ...]  # labelled sentences per language, most first
    foreign_language: str | None  # the foreign language with the most labelled text
    foreign_share: float  # share of labelled text (by weight) in any foreign language
    switch: bool  # >= 2 labelled sentences in a row in the same foreign language
    mixing: bool  # one foreign language in >= 2 sentences and >= mixing_share of the text
    corruption: str | None  # evidence of broken encoding
    kind: Anomaly | None = None  # set when verdict is anomaly

    @property
    def anomaly(self) -> bool:
        return self.verdict is TextVerdict.anomaly

    @property
    def ok(self) -> bool:
        return self.verdict is TextVerdict.ok

    @property
    def inconclusive(self) -> bool:
        return self.verdict is TextVerdict.inconclusive

    @property
    def judged(self) -> int:
        return sum(n for _, n in self.counts)

    def count(self, language: str) -> int:
        return dict(self.counts).get(language, 0)
