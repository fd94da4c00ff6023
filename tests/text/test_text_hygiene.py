"""Hygiene: stray leading fragments and degenerate repetition, per answer and as a contract."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.config.probe_set import ProbeSet
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.evidence import prose_answers
from canary.core.contracts.hygiene import hygiene_look, judge_hygiene
from canary.core.model import Contract, Observation, Result, Transport
from canary.text.corpus import compose, load_sentences
from canary.text.hygiene import (
    _SMALL_WINDOW_FITS,
    _compressed_size,
    degenerate_repetition,
    leading_garbage,
)


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("*Hello there, traveller. What brings you here?", "*"),
        (")Sure, here is the story you asked for.", ")"),
        ("ological The answer is simple: go north.", "ological"),
        ("ologicalThe answer is simple: go north.", "ological"),
        (", well then, let us begin.", ","),
        (".Olá, tudo bem?", "."),
        ("\u200bHello there.", "U+200B"),
        ("\ufeffHello there.", "U+FEFF"),
        ("」こんにちは、元気ですか。", "」"),
        (";) Claro que sim.", ";)"),
        ("*)**Nome:** Ana", "*)**"),
        ("\u0301Hello", "combining U+0301"),
        # a fragment before a one-letter word, a number or another script
        ("ological O cavaleiro desceu do cavalo.", "ological"),
        ("ing 01 de Agosto, na praia.", "ing"),
        ("ological Привет, путник.", "ological"),
        ("ing не знаю, что сказать.", "ing"),
        ("ological 你好，旅行者。", "ological"),
        ("ing مرحبا بك أيها المسافر.", "ing"),
        ("ological Đồng hồ đã điểm.", "ological"),
        # an opener never closed, an en dash glued to the text with no dialogue tag after it
        ('"Olá, viajante, entre e aqueça-se.', '"'),
        ("–O cavaleiro desceu do cavalo.", "–"),
    ],
)
def test_stray_leading_fragment_is_found(text: str, evidence: str) -> None:
    assert leading_garbage(text) == evidence


@pytest.mark.parametrize(
    "text",
    [
        "Hello there, traveller.",
        '"Stay back!" she shouted.',
        "«Olá», disse ela.",
        "¿Qué tal estás hoy?",
        "¡Hola, amigo!",
        "**Name:** Ana. **Age:** 23.",
        "*waves and smiles* Hi there!",
        "_Quietly_, he left.",
        "- first item\n- second item",
        "* first item",
        "# The tale\n\nOnce upon a time.",
        "> A quote to begin with.",
        "(laughs) Okay, okay.",
        "[Scene: a tavern] The door opens.",
        "...and then she left.",
        "…e depois foi embora.",
        "—Sí, claro —respondió.",
        "–Sí, claro –respondió.",
        '"Olá" e "tchau" foram as palavras dela.',
        '"Olá," disse ela. "Entre."',
        "ну, Маша, входи.",
        "– Oui, bien sûr.",
        "1. Open the door.",
        "「こんにちは」と彼は言った。",
        "😀 Hi!",
        "$5 is the price.",
        "\n\n  Hello after blank lines.",
        "e Maria sorriu.",
        "iPhone sales grew.",
        "and then he smiled.",
        "| a | b |\n|---|---|",
        "`code` first.",
        "",
    ],
)
def test_legitimate_openings_are_clean(text: str) -> None:
    assert leading_garbage(text) is None


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("I am here. " * 8, "'i am here' x8"),
        ("Era uma vez. " + "E ele disse que voltaria um dia para casa. " * 4, "'e ele disse' x4"),
        ("no no no no no no no", "'no' x7 in a row"),
        ("我爱你我爱你" * 6, "'我爱你我爱你' x11"),
        ("Wow" + "!" * 20, "'!' x20"),
    ],
)
def test_degenerate_repetition_is_found(text: str, evidence: str) -> None:
    assert degenerate_repetition(text) == evidence


def test_long_loop_compresses_too_well() -> None:
    loop = " ".join(f"step{i % 3} done" for i in range(120))
    found = degenerate_repetition(loop)
    assert found is not None


@pytest.mark.parametrize(
    "text",
    [
        "The cat sat on the mat. The dog barked at the cat, and the mat was wet.",
        "No, no, no! Not again.",
        "----\nA horizontal rule above.",
        "Chapter one. Chapter two. Chapter three.",
    ],
)
def test_normal_text_is_not_repetition(text: str) -> None:
    assert degenerate_repetition(text) is None


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_corpus_answers_seldom_repeat(corpus: Path, language: str) -> None:
    pool = load_sentences(corpus, language)
    rng = random.Random(f"rep-{language}")
    flagged = [
        t for t in (compose(rng.sample(pool, 6)) for _ in range(100)) if degenerate_repetition(t)
    ]
    assert len(flagged) <= 2, flagged


def answer(
    content: str, contract: Contract = Contract.refusal, transport: Transport = Transport.ok
) -> Observation:
    return Observation(contract=contract, tag="p", transport=transport, content=content)


CLEAN = "Claro! Aqui está a história que pediste."
STRAY = "*Claro! Aqui está a história que pediste."


@pytest.mark.parametrize(
    ("contents", "share", "result"),
    [
        ([STRAY] * 4 + [CLEAN], 0.4, Result.fail),
        ([STRAY, STRAY, CLEAN, CLEAN, CLEAN], 0.4, Result.fail),  # 40 % of 5
        ([STRAY, STRAY, CLEAN, CLEAN, CLEAN], 0.6, Result.passed),
        ([STRAY, STRAY, STRAY, CLEAN, CLEAN], 0.6, Result.fail),
        ([STRAY, STRAY, CLEAN], 0.4, Result.fail),
        ([STRAY, STRAY], 0.4, Result.fail),
        ([STRAY, CLEAN], 0.4, Result.passed),  # one answer is never enough
        ([STRAY, CLEAN, CLEAN, CLEAN, CLEAN], 0.2, Result.passed),
        ([CLEAN] * 5, 0.4, Result.passed),
        ([STRAY], 0.4, Result.inconclusive),
        ([], 0.4, Result.inconclusive),
    ],
)
def test_hygiene_fails_on_the_share_of_unclean_answers(
    contents: list[str], share: float, result: Result
) -> None:
    answers = [answer(c) for c in contents]
    judged = judge_hygiene(answers, answers, share)
    assert judged.contract is Contract.hygiene
    assert judged.result is result


def test_hygiene_detail_names_the_fragment() -> None:
    answers = [answer(STRAY)] * 4 + [answer(CLEAN)]
    judged = judge_hygiene(answers, answers)
    assert judged.detail == "stray leading fragment in 4/5 answers: '*'"
    assert judged.reason == "leading_garbage"
    assert judged.figure == pytest.approx(0.8)


def test_hygiene_counts_repetition_too() -> None:
    looping = "Estou aqui. " * 8
    answers = [answer(looping), answer(looping), answer(CLEAN)]
    judged = judge_hygiene(answers, answers)
    assert judged.result is Result.fail
    assert "degenerate repetition in 2/3 answers" in judged.detail


def test_the_answers_judged_are_the_rounds_prose_answers(probe_set: ProbeSet) -> None:
    """JSON answers, refusals, cut or failed answers and another provider's are left out."""
    observations = [
        answer(STRAY, contract=Contract.ttft),
        answer(CLEAN, contract=Contract.language),
        answer(STRAY),  # the refusal continuation, answered
        answer('{"mood": "happy"}', contract=Contract.schema),
        answer("}", contract=Contract.tools),
        answer(STRAY, transport=Transport.provider_error),
        answer("*I can't continue this role-play.", contract=Contract.ttft),  # a refusal
        Observation(Contract.ttft, "p", Transport.ok, content=STRAY, finish_reason="length"),
        Observation(Contract.ttft, "p", Transport.ok, content=STRAY, attribution_ok=False),
    ]
    answers = prose_answers(observations, probe_set.refusal_patterns)
    assert [o.content for o in answers] == [STRAY, CLEAN, STRAY]
    judged = judge_hygiene(answers, observations, 0.6)
    assert judged.result is Result.fail
    assert judged.detail == "stray leading fragment in 2/3 answers: '*'"


def test_only_transport_errors_are_no_evidence() -> None:
    failed = [answer(STRAY, transport=Transport.timeout), answer("", contract=Contract.schema)]
    judged = judge_hygiene([], failed)
    assert judged.result is Result.transport_error


@pytest.mark.parametrize(
    ("recheck", "eligible", "result"),
    [
        (answer(STRAY, contract=Contract.language), True, Result.fail),
        (answer(CLEAN, contract=Contract.language), True, Result.passed),
        (answer(STRAY, contract=Contract.language), False, Result.inconclusive),
        (answer("", contract=Contract.language, transport=Transport.timeout), True,
         Result.inconclusive),
    ],
)  # fmt: skip
def test_a_recheck_answer_is_unclean_or_clean(
    recheck: Observation, eligible: bool, result: Result
) -> None:
    assert hygiene_look(recheck, eligible).result is result


@given(
    unit=st.text(min_size=1, max_size=40),
    repeats=st.integers(1, 400),
    noise=st.binary(max_size=3000),
)
@settings(max_examples=examples(200), deadline=None)
def test_the_small_window_compresses_to_as_many_bytes_as_zlib_default(
    unit: str, repeats: int, noise: bytes
) -> None:
    for raw in ((unit * repeats).encode(), noise, noise + (unit * repeats).encode()):
        assert _compressed_size(raw) == len(zlib.compress(raw, 1))


@pytest.mark.parametrize("size", [_SMALL_WINDOW_FITS - 1, _SMALL_WINDOW_FITS, 20_000])
def test_the_small_window_holds_at_its_edge(size: int) -> None:
    raw = random.Random(size).randbytes(size // 2) * 2  # a repeat half the text away
    assert _compressed_size(raw) == len(zlib.compress(raw, 1))
