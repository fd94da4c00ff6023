"""Hygiene: stray leading fragments and degenerate repetition, per answer and as a contract."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from canary.core.contracts.hygiene import judge_hygiene
from canary.core.model import Contract, Observation, Result, Transport
from canary.settings import SUPPORTED_LANGUAGES
from canary.text.corpus import compose, load_sentences
from canary.text.hygiene import degenerate_repetition, leading_garbage


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
    ("contents", "result"),
    [
        ([STRAY] * 4 + [CLEAN], Result.fail),
        ([STRAY, STRAY, CLEAN], Result.fail),
        ([STRAY, STRAY], Result.fail),
        ([STRAY, CLEAN], Result.passed),  # half is not most
        ([STRAY, STRAY, CLEAN, CLEAN], Result.passed),
        ([STRAY, CLEAN, CLEAN, CLEAN, CLEAN], Result.passed),
        ([CLEAN] * 5, Result.passed),
        ([STRAY], Result.inconclusive),
        ([], Result.inconclusive),
    ],
)
def test_hygiene_fails_when_most_answers_show_it(contents: list[str], result: Result) -> None:
    judged = judge_hygiene([answer(c) for c in contents])
    assert judged.contract is Contract.hygiene
    assert judged.result is result


def test_hygiene_detail_names_the_fragment() -> None:
    judged = judge_hygiene([answer(STRAY)] * 4 + [answer(CLEAN)])
    assert judged.detail == "stray leading fragment in 4/5 answers: '*'"
    assert judged.reason == "leading_garbage"
    assert judged.figure == pytest.approx(0.8)


def test_hygiene_counts_repetition_too() -> None:
    looping = "Estou aqui. " * 8
    judged = judge_hygiene([answer(looping), answer(looping), answer(CLEAN)])
    assert judged.result is Result.fail
    assert "degenerate repetition in 2/3 answers" in judged.detail


def test_hygiene_ignores_json_answers_and_transport_failures() -> None:
    observations = [
        answer(STRAY),
        answer(CLEAN),
        answer('{"mood": "happy"}', contract=Contract.schema),
        answer("}", contract=Contract.tools),
        answer(STRAY, transport=Transport.provider_error),
        Observation(
            contract=Contract.language,
            tag="p",
            transport=Transport.ok,
            attribution_ok=False,
            content=STRAY,
        ),
    ]
    judged = judge_hygiene(observations)
    assert judged.result is Result.passed
    assert (
        judged.detail
        == "stray leading fragment in 1/2 answers: '*' (fails when most of 2 answers show it)"
    )
