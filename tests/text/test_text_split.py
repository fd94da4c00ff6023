"""Sentence splitting, evidence weights and encoding checks: pure string rules."""

from __future__ import annotations

import pytest

from canary.text.encoding import encoding_corruption
from canary.text.sentences import clean, split_sentences, weight


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. How are you? Fine!", ["Hello there.", "How are you?", "Fine!"]),
        ("今日は晴れです。明日は雨です！本当？", ["今日は晴れです。", "明日は雨です！", "本当？"]),
        ("他说：「好的。」然后走了。", ["他说：「好的。」", "然后走了。"]),
        (
            "Dr. Silva met J. R. Tolkien. Then he left.",
            ["Dr. Silva met J. R. Tolkien.", "Then he left."],
        ),
        ("First line\nsecond line without a stop", ["First line", "second line without a stop"]),
        ('"Stop!" she cried. He stopped.', ['"Stop!"', "she cried.", "He stopped."]),
        ("هل أنت بخير؟ نعم أنا بخير.", ["هل أنت بخير؟", "نعم أنا بخير."]),
        ("Version 3.5 is out. Nice", ["Version 3.5 is out.", "Nice"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_long_thai_block_is_cut_at_spaces() -> None:
    block = " ".join(["ภาษาไทยไม่มีเครื่องหมายวรรคตอนสำหรับจบประโยค"] * 12)
    pieces = split_sentences(block)
    assert len(pieces) > 1
    assert " ".join(pieces) == block
    assert split_sentences("สวัสดีครับ วันนี้อากาศดีมาก") == ["สวัสดีครับ วันนี้อากาศดีมาก"]


def test_clean_drops_code_links_and_addresses() -> None:
    text = "Veja `print(x)` e https://example.com/x ou mail@example.com.\n```\ncode here\n```\nFim."
    cleaned = clean(text)
    for gone in ("print", "example", "code here"):
        assert gone not in cleaned
    assert "Veja" in cleaned and "Fim." in cleaned


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [("abc d", 4), ("日本語です", 15), ("한국어", 6), ("12 + 3 = 15", 0), ("Olá", 3)],
)
def test_weight_counts_letters_and_weighs_ideographs(sentence: str, expected: int) -> None:
    assert weight(sentence) == expected


@pytest.mark.parametrize(
    "text",
    [
        "SÃO PAULO e NÃO são palavras normais em maiúsculas.",
        "Hôm nay tôi đã ăn phở. ĐÃ XONG!",
        "Il a dit « à bientôt » et il est parti.",
        "Çünkü şu an ülkemizde eğitim önemli.",
        "Zażółć gęślą jaźń — Grüße aus München.",
        "He said “fine” — and left…",
        "ÅSA, ÄRGER…, SÃO PAULO, «Olá»",  # capital leads where real text has them
    ],
)
def test_clean_text_has_no_encoding_corruption(text: str) -> None:
    assert encoding_corruption(text) is None


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("Sie starb am 11. MÃ¤rz 1796.", "mojibake 'Ã¤'"),
        ("It\u00e2\u20ac\u2122s broken", "mojibake 'â€™'"),
        ("WyszukujÄ\u0085c", "mojibake 'ÄU+0085'"),
        ("duruÅŸu, eÄŸitime", "mojibake 'ÅŸ'"),
        ("broken \ufffd here", "U+FFFD x1"),
        ("d\u0092un", "C1 control U+0092 x1"),
        # word-final double encoding: the lead letter comes right after a lowercase one
        ("reprezentowaÅ\u201a nowy minister", "mojibake 'Å‚'"),
        ("Der Antrag muss vor der MaÃ\u0178nahme gestellt werden.", "mojibake 'ÃŸ'"),
        ("la pompe Ã\u00a0 incendie", "mojibake 'Ã\\xa0'"),
        ("dato \u00e2\u201a\u00ac26 milioni", "mojibake 'â‚¬'"),
        ("si eÌ\u20ac chiuso", "mojibake 'Ì€'"),
    ],
)
def test_encoding_corruption_names_its_evidence(text: str, evidence: str) -> None:
    assert encoding_corruption(text) == evidence
