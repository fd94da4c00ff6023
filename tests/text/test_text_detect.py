"""Language analysis with the real lingua detector: hand-written answers and the shared corpus."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from damage import cp1252_residue, double_encoded

from canary.config.settings import SUPPORTED_LANGUAGES
from canary.text.analysis import Anomaly, TextVerdict
from canary.text.corpus import compose, load_sentences
from canary.text.detect import LanguageAnalyzer, UnsupportedLanguage

PT = [
    "O cavaleiro desceu do cavalo e olhou para o castelo abandonado.",
    "As janelas estavam partidas e o vento assobiava pelos corredores vazios.",
    "Ele lembrou-se da infância que passou ali com os irmãos mais velhos.",
    "Não havia ninguém à espera dele, nem sequer o velho jardineiro.",
    "Mesmo assim, decidiu entrar e procurar o diário perdido do pai.",
    "A porta rangeu quando a empurrou com o ombro cansado.",
]
ES = [
    "Sin embargo, nadie sabía dónde estaba la llave del sótano.",
    "Él sonrió y dijo que volvería mañana con más información.",
]
DE = [
    "Der Ritter stieg vom Pferd und betrachtete die verlassene Burg.",
    "Die Fenster waren zerbrochen und der Wind pfiff durch die leeren Gänge.",
    "Er erinnerte sich an die Kindheit, die er hier mit seinen Brüdern verbracht hatte.",
    "Niemand wartete auf ihn, nicht einmal der alte Gärtner.",
]
EN = [
    "Anyway, I think we should probably head back before it gets dark.",
    "The road through the forest is dangerous at night, and the guards know it.",
]


def test_clean_portuguese_answer_is_ok(analyzer: LanguageAnalyzer) -> None:
    result = analyzer(" ".join(PT), "pt")
    assert result.verdict is TextVerdict.ok
    assert result.count("pt") >= 5
    assert result.foreign_share == 0.0


def test_portuguese_answer_with_two_of_six_spanish_sentences_is_an_anomaly(
    analyzer: LanguageAnalyzer,
) -> None:
    result = analyzer(" ".join(PT[:4] + ES), "pt")
    assert result.verdict is TextVerdict.anomaly
    assert result.foreign_language == "es"
    assert result.switch
    assert result.reason == "es in 2/6 sentences of a pt answer"


def test_spanish_scattered_through_portuguese_is_mixing(analyzer: LanguageAnalyzer) -> None:
    text = " ".join([PT[0], ES[0], PT[1], PT[2], ES[1], PT[3]])
    result = analyzer(text, "pt")
    assert result.anomaly
    assert result.mixing and not result.switch
    assert result.kind is Anomaly.language_mixing


def test_clear_switch_from_german_to_english_is_an_anomaly(analyzer: LanguageAnalyzer) -> None:
    result = analyzer(" ".join(DE + EN), "de")
    assert result.kind is Anomaly.language_switch
    assert result.foreign_language == "en"
    assert result.count("en") == 2


def test_one_foreign_sentence_is_not_a_switch(analyzer: LanguageAnalyzer) -> None:
    result = analyzer(" ".join(DE + EN[:1]), "de")
    assert result.verdict is TextVerdict.ok


def test_whole_answer_in_another_language_is_an_anomaly(analyzer: LanguageAnalyzer) -> None:
    result = analyzer(" ".join(EN), "pt")
    assert result.anomaly
    assert result.foreign_language == "en"


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("O cavaleiro disse que nÃ£o voltaria ao castelo tÃ£o cedo, e partiu.", "mojibake 'Ã£'"),
        ("Ele olhou para o castelo \ufffd\ufffd e decidiu entrar sem medo.", "U+FFFD x2"),
        ("Il n\u0092a pas voulu revenir au château avant la nuit tombée.", "C1 control U+0092 x1"),
        ("He said it\u00e2\u20ac\u2122s too late to go back to the castle now.", "mojibake"),
    ],
)
def test_encoding_corruption_is_an_anomaly(
    analyzer: LanguageAnalyzer, text: str, evidence: str
) -> None:
    result = analyzer(text, "pt")
    assert result.kind is Anomaly.encoding_corruption
    assert result.corruption is not None and evidence in result.corruption


@pytest.mark.parametrize("text", ["Olá!", "Sim, claro.", "Ok", "", "42 — 17 — 3", "🙂🙂"])
def test_short_or_empty_answer_is_inconclusive(analyzer: LanguageAnalyzer, text: str) -> None:
    assert analyzer(text, "pt").verdict is TextVerdict.inconclusive


def test_code_and_links_do_not_count_as_english(analyzer: LanguageAnalyzer) -> None:
    text = (
        " ".join(PT[:3])
        + "\n```python\nprint('hello world, this is english code')\n```\n"
        + " ".join(PT[3:])
    )
    text += " Veja https://example.com/the-english-page-about-things para mais."
    assert analyzer(text, "pt").verdict is TextVerdict.ok


def test_unconfigured_language_is_refused() -> None:
    with pytest.raises(UnsupportedLanguage):
        LanguageAnalyzer(["pt", "es"]).analyze("Hello there", "en")
    with pytest.raises(UnsupportedLanguage):
        LanguageAnalyzer(["xx"])


def test_analysis_of_the_same_answer_is_remembered(analyzer: LanguageAnalyzer) -> None:
    text = " ".join(PT)
    assert analyzer(text, "pt") is analyzer(text, "pt")


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_clean_corpus_answers_seldom_flag(
    analyzer: LanguageAnalyzer, corpus: Path, language: str
) -> None:
    pool = load_sentences(corpus, language)
    rng = random.Random(f"clean-{language}")
    flagged = [
        text
        for text in (compose(rng.sample(pool, 6)) for _ in range(40))
        if analyzer(text, language).anomaly
    ]
    assert len(flagged) <= 1, flagged


def test_corpus_portuguese_with_two_of_six_spanish_lines_mostly_flags(
    analyzer: LanguageAnalyzer, corpus: Path
) -> None:
    pt, es = load_sentences(corpus, "pt"), load_sentences(corpus, "es")
    rng = random.Random("pt-es")
    results = [analyzer(compose(rng.sample(pt, 4) + rng.sample(es, 2)), "pt") for _ in range(60)]
    flagged = [r for r in results if r.anomaly]
    # The corpus's Spanish lost its accents (see its README), so this is a pessimistic floor.
    assert len(flagged) >= 40
    assert all(r.foreign_language == "es" for r in flagged)


def test_lines_with_cp1252_residue_are_flagged(analyzer: LanguageAnalyzer, corpus: Path) -> None:
    """French lines with typographic apostrophes, read the way the damaged web text was."""
    clean = [line for line in load_sentences(corpus, "fr") if "\u2019" in line][:20]
    assert len(clean) == 20
    assert not any(analyzer(line, "fr").kind is Anomaly.encoding_corruption for line in clean)
    damaged = [cp1252_residue(line) for line in clean]
    assert all("\u0092" in line for line in damaged)
    assert all(analyzer(line, "fr").kind is Anomaly.encoding_corruption for line in damaged)


def test_corpus_loader_drops_damaged_lines_and_keeps_boundaries(
    corpus: Path, tmp_path: Path
) -> None:
    lines = load_sentences(corpus, "fr")
    ellipses = [i for i, line in enumerate(lines) if "\u2026" in line][:2]
    apostrophes = [i for i, line in enumerate(lines) if "\u2019" in line][:3]
    assert len(ellipses) == 2 and len(apostrophes) == 3
    for i in ellipses:  # cp1252 residue: "…" becomes U+0085, which str.splitlines() cuts at
        lines[i] = cp1252_residue(lines[i])
    for i in apostrophes:
        lines[i] = double_encoded(lines[i])
    damaged = set(ellipses + apostrophes)
    assert sum("\u0085" in line for line in lines) == 2
    folder = tmp_path / "lingua-sentences"
    folder.mkdir()
    (folder / "fr.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = load_sentences(tmp_path, "fr", clean=False)
    kept = load_sentences(tmp_path, "fr")
    assert raw == lines  # split on "\n" only: a C1 control inside a line does not cut it
    assert kept == [line for i, line in enumerate(lines) if i not in damaged]
    assert compose(["Sem ponto", "Com ponto.", "Fim"]) == "Sem ponto\nCom ponto. Fim"


@pytest.mark.parametrize(
    ("code", "expected"), [("en", "an"), ("es", "an"), ("fr", "an"), ("pt", "a"), ("uk", "a")]
)
def test_the_article_before_a_language_code_follows_how_it_is_read(
    code: str, expected: str
) -> None:
    from canary.text.detect import article

    assert article(code) == expected


def test_a_drift_out_of_english_reads_an_en_answer(analyzer: LanguageAnalyzer) -> None:
    text = (
        "The harbour was quiet this morning and the boats rocked slowly. "
        "El mercado estaba lleno de gente que compraba pescado fresco. "
        "Los niños corrían por la plaza mientras sus padres hablaban. "
        "La tarde llegó con un viento cálido que venía del mar."
    )
    result = analyzer.analyze(text, "en")
    assert "sentences of an en answer" in result.reason
