"""Language integrity of one answer, judged sentence by sentence over lingua.

"More than one language detected" fires on clean text, so nothing here asks that. Each sentence
is labelled with a language only when it is long enough and that language's confidence beats the
runner-up by a margin; otherwise it is ``unknown``. The answer is an anomaly when a foreign
language takes over (a switch: two labelled sentences in a row), keeps coming back (mixing), or
the text is visibly corrupted; it is inconclusive when too little of it could be labelled.

Speed: every sentence is first scored by the low-accuracy detector (trigrams only, cheaper);
only when that does not confirm the expected language by a wide margin is the sentence scored
again in high-accuracy mode, which is the one whose margin decides.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from canary.config.settings import SUPPORTED_LANGUAGES
from canary.text.analysis import UNKNOWN, Anomaly, SentenceLanguage, TextAnalysis, TextVerdict
from canary.text.encoding import encoding_corruption
from canary.text.sentences import clean, split_sentences, weight


class UnsupportedLanguage(ValueError):
    """A language code the analyzer was not built for."""

    def __init__(self, code: str, languages: Iterable[str]) -> None:
        super().__init__(f"unsupported language {code!r} (configured: {', '.join(languages)})")
        self.code = code


@dataclass(frozen=True)
class Rules:
    """Thresholds, tuned on the shared corpus (see tests/bench/bench_language.py)."""

    min_sentence_weight: int = 12  # shorter sentences are not labelled
    margin: float = 0.2  # high-accuracy confidence: top minus runner-up
    fast_margin: float = 0.8  # low-accuracy confidence that confirms the expected language
    min_judged_weight: int = 40  # less labelled expected text than this: inconclusive
    mixing_share: float = 0.2  # share of labelled text in one foreign language, with >= 2 sentences
    foreign_min_weight: int = 60  # a wholly foreign answer needs at least this much evidence
    fast_chars: int = 100  # the low-accuracy pass reads at most this much of a sentence


@dataclass(frozen=True)
class _Detectors:
    high: LanguageDetector
    low: LanguageDetector
    by_language: dict[Language, str]


_CACHE: dict[tuple[str, ...], _Detectors] = {}
_PRELOADED: set[tuple[str, ...]] = set()
_LOCK = threading.Lock()


def _detectors_for(languages: tuple[str, ...], *, preload: bool = False) -> _Detectors:
    """Both detectors, built once per language set, process-wide. The low-accuracy one loads its
    trigram models at once (a tenth of a second); the high-accuracy one loads a model when a
    sentence first needs it, or every model now (about 3 s) with ``preload``: lingua shares the
    models it has loaded with every detector of the process."""
    with _LOCK:
        found = _CACHE.get(languages)
        isos = [IsoCode639_1.from_str(code) for code in languages]
        if found is None:
            found = _Detectors(
                high=LanguageDetectorBuilder.from_iso_codes_639_1(*isos).build(),
                low=LanguageDetectorBuilder.from_iso_codes_639_1(*isos)
                .with_preloaded_language_models()
                .with_low_accuracy_mode()
                .build(),
                by_language={
                    Language.from_iso_code_639_1(iso): code
                    for iso, code in zip(isos, languages, strict=True)
                },
            )
            _CACHE[languages] = found
        if preload and languages not in _PRELOADED:
            every = LanguageDetectorBuilder.from_iso_codes_639_1(*isos)
            every.with_preloaded_language_models().build()
            _PRELOADED.add(languages)
        return found


class LanguageAnalyzer:
    """Judges answers expected in one of ``languages``; detectors are shared, built on first use."""

    def __init__(
        self,
        languages: Iterable[str] = SUPPORTED_LANGUAGES,
        rules: Rules | None = None,
        cache_size: int = 64,
    ) -> None:
        codes = tuple(sorted({code.lower() for code in languages}))
        if not codes:
            raise ValueError("at least one language is needed")
        for code in codes:
            if code not in SUPPORTED_LANGUAGES:
                raise UnsupportedLanguage(code, SUPPORTED_LANGUAGES)
        self.languages = codes
        self.rules = rules or Rules()
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], TextAnalysis] = OrderedDict()
        self._cache_lock = threading.Lock()

    def warm(self) -> None:
        """Load every model now (a few seconds) rather than on the first answers."""
        _detectors_for(self.languages, preload=True)

    def __call__(self, text: str, expected: str) -> TextAnalysis:
        return self.analyze(text, expected)

    def analyze(self, text: str, expected: str) -> TextAnalysis:
        """Judge ``text`` expected in ``expected``; the last few answers are remembered, since
        the runner asks about a first answer before the contract judges it."""
        if expected not in self.languages:
            raise UnsupportedLanguage(expected, self.languages)
        key = (text, expected)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        analysis = self._analyze(text, expected)
        if self._cache_size > 0:
            with self._cache_lock:
                self._cache[key] = analysis
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return analysis

    def _analyze(self, text: str, expected: str) -> TextAnalysis:
        detectors = _detectors_for(self.languages)
        corruption = encoding_corruption(text)
        labelled = tuple(self._label(detectors, s, expected) for s in split_sentences(clean(text)))
        return _judge(labelled, expected, corruption, self.rules)

    def _label(self, detectors: _Detectors, sentence: str, expected: str) -> SentenceLanguage:
        size = weight(sentence)
        if size < self.rules.min_sentence_weight:
            return SentenceLanguage(sentence, size, UNKNOWN, 0.0)
        code, margin = self._top(detectors.low, detectors, _head(sentence, self.rules.fast_chars))
        if code == expected and margin >= self.rules.fast_margin:
            return SentenceLanguage(sentence, size, code, margin)
        code, margin = self._top(detectors.high, detectors, sentence)
        if code is None or margin < self.rules.margin:
            return SentenceLanguage(sentence, size, UNKNOWN, margin)
        return SentenceLanguage(sentence, size, code, margin)

    @staticmethod
    def _top(
        detector: LanguageDetector, detectors: _Detectors, sentence: str
    ) -> tuple[str | None, float]:
        values = detector.compute_language_confidence_values(sentence)
        if not values or values[0].value <= 0.0:
            return None, 0.0
        runner_up = values[1].value if len(values) > 1 else 0.0
        return detectors.by_language[values[0].language], values[0].value - runner_up


def _head(sentence: str, limit: int) -> str:
    """The first ``limit`` characters of ``sentence``, cut at a space when there is one."""
    if len(sentence) <= limit:
        return sentence
    cut = sentence.rfind(" ", limit // 2, limit)
    return sentence[: cut if cut > 0 else limit]


def _judge(
    sentences: tuple[SentenceLanguage, ...], expected: str, corruption: str | None, rules: Rules
) -> TextAnalysis:
    labelled = [s for s in sentences if s.language != UNKNOWN]
    weights: dict[str, int] = {}
    counts: dict[str, int] = {}
    for s in labelled:
        weights[s.language] = weights.get(s.language, 0) + s.weight
        counts[s.language] = counts.get(s.language, 0) + 1
    judged_weight = sum(weights.values())
    foreign = {lang: w for lang, w in weights.items() if lang != expected}
    foreign_language = max(foreign, key=lambda lang: (foreign[lang], lang)) if foreign else None
    foreign_share = sum(foreign.values()) / judged_weight if judged_weight else 0.0
    switch = mixing = wholly = False
    if foreign_language is not None:
        switch = any(
            a.language == b.language == foreign_language
            for a, b in zip(labelled, labelled[1:], strict=False)
        )
        share = foreign[foreign_language] / judged_weight
        mixing = counts[foreign_language] >= 2 and share >= rules.mixing_share
        wholly = expected not in weights and foreign[foreign_language] >= rules.foreign_min_weight
    total = len(sentences)
    ordered = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    kind: Anomaly | None = None
    expected_weight = weights.get(expected, 0)
    if corruption is not None:
        kind, reason = Anomaly.encoding_corruption, f"encoding corruption: {corruption}"
    elif foreign_language is not None and (switch or mixing or wholly):
        kind = Anomaly.language_switch if switch else Anomaly.language_mixing
        if not (switch or mixing):
            kind = Anomaly.wrong_language
        found = counts[foreign_language]
        reason = (
            f"{foreign_language} in {found}/{total} sentences of {article(expected)} "
            f"{expected} answer"
        )
    elif expected_weight < rules.min_judged_weight:
        reason = (
            f"too short or ambiguous: {expected_weight} letters judged {expected}, "
            f"need {rules.min_judged_weight}"
        )
    else:
        reason = f"{expected} in {counts.get(expected, 0)}/{total} sentences"
    if kind is not None:
        verdict = TextVerdict.anomaly
    elif expected_weight < rules.min_judged_weight:
        verdict = TextVerdict.inconclusive
    else:
        verdict = TextVerdict.ok
    return TextAnalysis(
        expected=expected,
        verdict=verdict,
        reason=reason,
        sentences=sentences,
        counts=ordered,
        foreign_language=foreign_language,
        foreign_share=foreign_share,
        switch=switch,
        mixing=mixing,
        corruption=corruption,
        kind=kind,
    )


# A language code is read letter by letter: "an en answer", "an fr answer", "a pt answer".
_VOWEL_SOUND_LETTERS = frozenset("aefhilmnorsx")


def article(code: str) -> str:
    """The indefinite article before a language code read as letters."""
    return "an" if code[:1].lower() in _VOWEL_SOUND_LETTERS else "a"
