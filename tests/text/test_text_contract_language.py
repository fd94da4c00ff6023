"""The language contract over every prose answer of a round: single-answer anomalies, persistent
mixing across answers, the re-check looks (table over a fixed analysis), and real runs."""

from __future__ import annotations

import pytest
from builders import observation

from canary.core.contracts.confirm import confirm
from canary.core.contracts.language import judge_language, language_look, persistent_foreign
from canary.core.model import Contract, Observation, Result, Transport
from canary.text.analysis import Anomaly, TextAnalysis, TextVerdict
from canary.text.detect import LanguageAnalyzer


def _analysis(
    verdict: TextVerdict, reason: str, counts: tuple[tuple[str, int], ...], **extra: object
) -> TextAnalysis:
    foreign = next((lang for lang, _ in counts if lang != "pt"), None)
    fields: dict[str, object] = {
        "expected": "pt",
        "verdict": verdict,
        "reason": reason,
        "sentences": (),
        "counts": counts,
        "foreign_language": foreign,
        "foreign_share": 0.0,
        "switch": False,
        "mixing": False,
        "corruption": None,
        **extra,
    }
    return TextAnalysis(**fields)  # type: ignore[arg-type]


# Answers named by what a fixed analysis says about them.
_ANALYSES = {
    "ok": _analysis(TextVerdict.ok, "pt in 4/4 sentences", (("pt", 4),)),
    # one Spanish sentence: no anomaly in the answer itself
    "one-es": _analysis(TextVerdict.ok, "pt in 3/4 sentences", (("pt", 3), ("es", 1))),
    "one-ru": _analysis(TextVerdict.ok, "pt in 3/4 sentences", (("pt", 3), ("ru", 1))),
    "bad": _analysis(
        TextVerdict.anomaly,
        "es in 2/6 sentences of a pt answer",
        (("pt", 4), ("es", 2)),
        switch=True,
        kind=Anomaly.language_switch,
    ),
    "short": _analysis(TextVerdict.inconclusive, "too short", ()),
}


def fixed(text: str, expected: str) -> TextAnalysis:
    return _ANALYSES[text]


def obs(content: str, transport: Transport = Transport.ok, attempt: int = 1) -> Observation:
    return observation(
        Contract.language, "p", transport, language="pt", attempt=attempt, content=content
    )


def first(*answers: str) -> tuple[Result, str | None, str | None]:
    looked = judge_language([obs(a) for a in answers], [obs(answers[0])], "pt", fixed)
    return looked.result.result, looked.result.reason, looked.foreign


@pytest.mark.parametrize(
    ("answers", "result", "reason", "foreign"),
    [
        (["ok"] * 5, Result.passed, None, None),
        (["short"] * 5, Result.inconclusive, "too_short_or_ambiguous", None),
        (["short", "ok"], Result.passed, None, None),
        # one anomaly in any answer of the round flags it
        (["ok", "ok", "bad", "ok", "ok"], Result.fail, "language_switch", "es"),
        # persistent mixing: one foreign sentence in 2, and a third, of at least 3 judged answers
        (["one-es"] * 3, Result.fail, "language_mixing", "es"),
        (["one-es", "one-es", "ok", "ok"], Result.fail, "language_mixing", "es"),
        (["one-es", "one-es", "ok", "ok", "ok"], Result.fail, "language_mixing", "es"),
        (["one-es", "one-es", "ok", "ok", "ok", "ok"], Result.fail, "language_mixing", "es"),
        (["one-es", "one-es", "ok", "ok", "ok", "ok", "ok"], Result.passed, None, None),
        (["one-es", "ok", "ok"], Result.passed, None, None),  # one carrier is never enough
        (["one-es", "one-ru", "ok", "ok", "ok"], Result.passed, None, None),  # not one language
        (["one-es", "one-es"], Result.passed, None, None),  # fewer than 3 judged answers
        (["one-es", "one-es", "short", "short"], Result.passed, None, None),  # 2 judged
    ],
)
def test_first_look(
    answers: list[str], result: Result, reason: str | None, foreign: str | None
) -> None:
    assert first(*answers) == (result, reason, foreign)


def test_persistent_mixing_explains_itself() -> None:
    answers = [obs(a) for a in ("one-es", "ok", "one-es", "one-es")]
    looked = judge_language(answers, answers[:1], "pt", fixed).result
    assert looked.detail == "es in 3/4 judged answers (persistent mixing)"
    assert looked.language_anomaly and looked.language == "pt"
    assert looked.figure == pytest.approx(0.75)
    assert persistent_foreign([fixed(a, "pt") for a in ("one-es", "ok", "ok")], "pt") is None


@pytest.mark.parametrize(
    ("recheck", "result"),
    [
        (obs("bad"), Result.fail),  # an anomaly itself
        (obs("one-es"), Result.fail),  # carries the foreign language the first look found
        (obs("one-ru"), Result.passed),  # another language: not this flag
        (obs("ok"), Result.passed),
        (obs("short"), Result.inconclusive),
        (obs("", Transport.timeout), Result.inconclusive),
    ],
)
def test_a_recheck_confirms_when_it_carries_the_flag(recheck: Observation, result: Result) -> None:
    assert language_look(recheck, True, "pt", fixed, "es").result is result


def test_a_refusal_or_cut_recheck_is_no_look() -> None:
    assert language_look(obs("one-es"), False, "pt", fixed, "es").result is Result.inconclusive


@pytest.mark.parametrize(
    ("rechecks", "result"),
    [
        (["one-es", "ok"], Result.fail),  # 2 of 3
        (["ok", "ok"], Result.passed),  # 1 of 3: not confirmed
        (["ok", "short"], Result.inconclusive),
        (["bad", "bad"], Result.fail),
    ],
)
def test_persistent_mixing_is_confirmed_two_of_three(rechecks: list[str], result: Result) -> None:
    answers = [obs(a) for a in ("one-es", "one-es", "one-es", "ok", "ok")]
    looked = judge_language(answers, answers[:1], "pt", fixed)
    looks = [language_look(obs(r), True, "pt", fixed, looked.foreign) for r in rechecks]
    judged = confirm(looked.result, looks)
    assert judged.result is result
    assert judged.language_anomaly  # the next round repeats the language either way


def test_transport_failures_are_not_evidence() -> None:
    timeout = obs("", Transport.timeout)
    looked = judge_language([], [timeout], "pt", fixed).result
    assert looked.result is Result.transport_error
    assert looked.detail == "no completed answer (1 timeout): not evidence either way"
    assert looked.language == "pt"
    refused = judge_language([], [obs("a refusal")], "pt", fixed).result
    assert (refused.result, refused.reason) == (Result.inconclusive, "no_answer")


PT = [
    "O cavaleiro desceu do cavalo e olhou para o castelo abandonado.",
    "As janelas estavam partidas e o vento assobiava pelos corredores vazios.",
    "Ele lembrou-se da infância que passou ali com os irmãos mais velhos.",
    "Não havia ninguém à espera dele, nem sequer o velho jardineiro.",
]
ES = [
    "Sin embargo, nadie sabía dónde estaba la llave del sótano.",
    "Él sonrió y dijo que volvería mañana con más información.",
    "La tormenta no dejó de golpear las ventanas durante toda la noche.",
]


def test_real_analyzer_fails_one_spanish_sentence_in_every_answer(
    analyzer: LanguageAnalyzer,
) -> None:
    """The case behind issue 13: no answer is an anomaly, together they are persistent."""
    answers = [obs(" ".join([*PT[:3], es])) for es in ES]
    assert not any(analyzer(o.content, "pt").anomaly for o in answers)
    looked = judge_language(answers, answers[:1], "pt", analyzer.analyze)
    assert looked.result.result is Result.fail and looked.foreign == "es"
    assert looked.result.reason == "language_mixing"
    recheck = obs(" ".join([ES[0], *PT[1:]]))
    judged = confirm(looked.result, [language_look(recheck, True, "pt", analyzer, "es")] * 2)
    assert judged.result is Result.fail
    assert judged.detail.startswith("es in 3/3 judged answers (persistent mixing); confirmed")


def test_real_analyzer_passes_clean_portuguese_answers(analyzer: LanguageAnalyzer) -> None:
    answers = [obs(" ".join(PT[i:] + PT[:i])) for i in range(4)]
    looked = judge_language(answers, answers[:1], "pt", analyzer.analyze).result
    assert looked.result is Result.passed, looked.detail
