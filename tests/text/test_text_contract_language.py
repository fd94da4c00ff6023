"""The language contract's 2-of-3 re-check rule (table over a fixed analysis) and one real run."""

from __future__ import annotations

import pytest

from canary.core.contracts.language import judge_language, needs_recheck
from canary.core.model import Contract, Observation, Result, Transport
from canary.text.analysis import Anomaly, TextAnalysis, TextVerdict
from canary.text.detect import LanguageAnalyzer

# Answers named by what a fixed analysis says about them: "bad" is an anomaly, "ok" is clean,
# "short" is inconclusive.
_ANALYSES = {
    "ok": TextAnalysis(
        "pt", TextVerdict.ok, "pt in 6/6 sentences", (), (("pt", 6),), None, 0.0, False, False, None
    ),
    "bad": TextAnalysis(
        "pt",
        TextVerdict.anomaly,
        "es in 2/6 sentences of a pt answer",
        (),
        (("pt", 4), ("es", 2)),
        "es",
        0.33,
        True,
        False,
        None,
        Anomaly.language_switch,
    ),  # fmt: skip
    "short": TextAnalysis(
        "pt", TextVerdict.inconclusive, "too short", (), (), None, 0.0, False, False, None
    ),
}


def fixed(text: str, expected: str) -> TextAnalysis:
    return _ANALYSES[text]


def obs(content: str, transport: Transport = Transport.ok, attempt: int = 1) -> Observation:
    return Observation(
        contract=Contract.language,
        tag="p",
        transport=transport,
        language="pt",
        attempt=attempt,
        content=content,
    )


TIMEOUT = obs("", Transport.timeout)
MISMATCH = Observation(
    contract=Contract.language, tag="p", transport=Transport.ok, attribution_ok=False, content="bad"
)


@pytest.mark.parametrize(
    ("answers", "result", "anomaly"),
    [
        (["ok"], Result.passed, False),
        (["short"], Result.inconclusive, False),
        (["bad", "bad", "bad"], Result.fail, True),
        (["bad", "bad", "ok"], Result.fail, True),
        (["bad", "ok", "bad"], Result.fail, True),
        (["bad", "ok", "ok"], Result.passed, True),
        (["bad", "short", "ok"], Result.inconclusive, True),
        (["bad"], Result.inconclusive, True),  # re-checks never came back
        (["bad", "ok"], Result.inconclusive, True),
        (["short", "ok"], Result.passed, False),
    ],
)
def test_two_of_three_rule(answers: list[str], result: Result, anomaly: bool) -> None:
    judged = judge_language([obs(a, attempt=i + 1) for i, a in enumerate(answers)], "pt", fixed)
    assert judged.contract is Contract.language
    assert judged.result is result
    assert judged.language_anomaly is anomaly
    assert judged.language == "pt"


def test_failure_explains_itself() -> None:
    judged = judge_language([obs("bad"), obs("bad", attempt=2), obs("ok", attempt=3)], "pt", fixed)
    assert judged.detail.startswith("es in 2/6 sentences of a pt answer (2/3 checks")
    assert judged.reason == "language_switch"
    assert judged.figure == 2.0


def test_transport_failures_are_not_evidence() -> None:
    assert judge_language([TIMEOUT], "pt", fixed).result is Result.transport_error
    assert judge_language([], "pt", fixed).result is Result.transport_error
    assert judge_language([MISMATCH], "pt", fixed).result is Result.transport_error
    # A re-check lost to a timeout leaves one anomaly against one clean answer: undecided.
    judged = judge_language([obs("bad"), TIMEOUT, obs("ok", attempt=3)], "pt", fixed)
    assert judged.result is Result.inconclusive


def test_needs_recheck_only_for_a_completed_anomaly() -> None:
    assert needs_recheck(obs("bad"), "pt", fixed)
    assert not needs_recheck(obs("ok"), "pt", fixed)
    assert not needs_recheck(obs("short"), "pt", fixed)
    assert not needs_recheck(MISMATCH, "pt", fixed)


def test_real_analyzer_fails_an_endpoint_that_mixes_spanish_into_portuguese(
    analyzer: LanguageAnalyzer,
) -> None:
    answer = (
        "O cavaleiro desceu do cavalo e olhou para o castelo abandonado. "
        "As janelas estavam partidas e o vento assobiava pelos corredores vazios. "
        "Ele lembrou-se da infância que passou ali com os irmãos mais velhos. "
        "Não havia ninguém à espera dele, nem sequer o velho jardineiro. "
        "Sin embargo, nadie sabía dónde estaba la llave del sótano. "
        "Él sonrió y dijo que volvería mañana con más información."
    )
    first = obs(answer)
    assert needs_recheck(first, "pt", analyzer)
    judged = judge_language([first, obs(answer, attempt=2), obs(answer, attempt=3)], "pt", analyzer)
    assert judged.result is Result.fail
    assert judged.detail.startswith("es in 2/6 sentences of a pt answer (3/3 checks")


def test_transport_error_names_its_causes() -> None:
    judged = judge_language([TIMEOUT, MISMATCH], "pt", fixed)
    assert judged.detail == "no completed answer (attribution_mismatch, timeout)"
