"""Text hygiene of one answer: stray leading punctuation or token fragments, degenerate repetition.

Pure string rules (no detector). Each returns a short evidence string, or ``None`` when clean.
The real case behind them: one host prefixed 19 of 20 answers with punctuation or a fragment of
an unrelated token (one stray byte before a Markdown ``*`` ruins the formatting of the answer).
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections import Counter

_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
# Characters that legitimately open an answer: quotes, inverted marks, dialogue dashes, brackets
# of CJK text, ellipsis, emphasis/list/heading/quote markers checked further below.
_OPENERS = frozenset("\"'“‘„‚«‹「『《〈【〔（¿¡—–…")
_PAIRED = {"(": ")", "[": "]", "{": "}", "`": "`"}
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3})(?=[^\W_]|[\"'“‘«(¿¡])(.+?)(?<=\S)\1(?![*_])")
_BULLET = re.compile(r"(?:[*+\-•]\s|#{1,6}\s|>\s?|\|.*\|)")
_ELLIPSIS = re.compile(r"\.{2,}")
_HTML_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^>\n]*)?>")
_DIALOGUE_TAG = re.compile(r"\s–\w")  # "–Sí, claro –respondió."
# Openers that a reader expects to be closed in the answer; one left open was never an opener.
_QUOTES = {'"': '"'}


def leading_garbage(text: str) -> str | None:
    """The stray prefix of ``text`` ('*', ')', 'ological', 'U+200B'), or ``None`` if clean."""
    body = text.lstrip(" \t\r\n")
    if not body:
        return None
    first = body[0]
    if first in _INVISIBLE:
        return f"U+{ord(first):04X}"
    if first == "\ufffd":
        return "U+FFFD"
    category = unicodedata.category(first)
    if category.startswith("M"):
        return f"combining U+{ord(first):04X}"
    if category.startswith(("L", "N")):
        return _fragment(body)
    if first in _QUOTES and _unclosed(body, first):
        return first
    if first == "–" and len(body) > 1 and not body[1].isspace() and not _DIALOGUE_TAG.search(body):
        return first  # an en dash glued to the first word, and no dialogue tag after it
    if category in ("Sc", "So") or first in _OPENERS:
        return None  # currency, emoji and symbols, quotes and dialogue marks
    line = body.split("\n", 1)[0]
    if first in "*_":
        if _EMPHASIS.match(line) or _BULLET.match(line):
            return None
        return _prefix(body)
    if first in "#>|-+•" and _BULLET.match(line):
        return None
    if first == "-" and len(line) > 1 and line[1].isupper():
        return None  # "-Sim, claro": a dialogue hyphen
    if first == "." and _ELLIPSIS.match(line):
        return None
    if first == "<" and _HTML_TAG.match(line):
        return None
    closer = _PAIRED.get(first)
    if closer is not None and closer in line[1:]:
        return None  # "(laughs)", "[Scene]", "`code`"
    return _prefix(body)


def _unclosed(body: str, opener: str) -> bool:
    """Whether the quote ``body`` opens with is left open (for '"': an odd count of them)."""
    if opener == '"':
        return body.count('"') % 2 == 1
    return not any(closer in body[1:] for closer in _QUOTES[opener])


def _prefix(body: str) -> str:
    """The run of punctuation at the start of ``body`` (what a reader would call the stray bit)."""
    end = 0
    while end < len(body) and end < 8 and not body[end].isalnum() and not body[end].isspace():
        end += 1
    return body[: max(end, 1)]


def _fragment(body: str) -> str | None:
    """A lowercase token fragment glued to a capitalised word, or set before anything that is not
    a lowercase word: a capital, a number, a word in a script without case, a quote."""
    end = 0
    while end < len(body) and body[end].isalpha() and body[end].islower():
        end += 1
    if end >= 3 and end + 1 < len(body) and body[end].isupper() and body[end + 1].islower():
        return body[:end]  # "ologicalThe"
    if end < 2 or end >= len(body) or not body[end].isspace():
        return None
    rest = body[end:].lstrip()
    if not rest or (rest[0].islower() and _script(rest[0]) == _script(body[0])):
        return None  # "and then he smiled."
    if rest[0] in ",;:.!?)]}":
        return None  # "ok, ..." set apart: not a fragment glued to an answer
    return body[:end]


def _script(ch: str) -> str:
    """The script of a letter: the first word of its Unicode name (LATIN, CYRILLIC...)."""
    return unicodedata.name(ch, "?").split(" ", 1)[0]


_WORD = re.compile(r"\w+")
_RUN = re.compile(r"(\S)\1{15,}")  # the same character 16+ times
_RUN_ALLOWED = frozenset("-=_*#~.·")  # Markdown rules, leaders and dots
_STREAK = 6  # the same word this many times in a row
_MIN_COMPRESS_BYTES = 400
_MAX_RATIO = 0.15  # healthy prose of this size compresses to 27-60 % (Thai lowest)
_MIN_COVER = 0.3  # share of the answer inside the repeated n-grams


def degenerate_repetition(text: str) -> str | None:
    """Evidence of abnormal repetition ("'i am here' x7", "compresses to 12 %"), or ``None``."""
    for run in _RUN.finditer(text):
        if run.group(1) not in _RUN_ALLOWED:
            return f"{run.group(1)!r} x{len(run.group(0))}"
    words = _WORD.findall(text.lower())
    spaced = len(words) >= 6 and sum(map(len, words)) / len(words) <= 12
    tokens = words if spaced else [ch for ch in text if not ch.isspace()]
    size = 3 if spaced else 6  # words, or characters for scripts without spaces
    counts = Counter(tokens)
    repeated = _repeated_ngram(tokens, counts, size, times=4)
    if repeated:
        joined = " ".join(repeated[0]) if spaced else "".join(repeated[0])
        return f"{joined!r} x{repeated[1]}"
    if spaced and counts.most_common(1)[0][1] >= _STREAK:
        streak = _same_token_streak(words)
        if streak:
            return f"{streak[0]!r} x{streak[1]} in a row"
    raw = text.encode("utf-8")
    if len(raw) >= _MIN_COMPRESS_BYTES:
        ratio = _compressed_size(raw) / len(raw)
        if ratio < _MAX_RATIO:
            return f"compresses to {ratio:.0%}"
    return None


# zlib's default 32 KiB window costs most of a short text's compression in setting itself up;
# an 8 KiB one compresses any text that fits in it to as many bytes (same level, same
# hash size), and the answers judged here almost always fit.
_SMALL_WINDOW_BITS = 13
_SMALL_WINDOW_FITS = (1 << _SMALL_WINDOW_BITS) - 262  # deflate's MIN_LOOKAHEAD


def _compressed_size(raw: bytes) -> int:
    """len(zlib.compress(raw, 1))."""
    if len(raw) > _SMALL_WINDOW_FITS:
        return len(zlib.compress(raw, 1))
    packer = zlib.compressobj(1, zlib.DEFLATED, _SMALL_WINDOW_BITS, 8)
    return len(packer.compress(raw)) + len(packer.flush())


def _repeated_ngram(
    tokens: list[str], frequency: Counter[str], size: int, times: int, cover: float = _MIN_COVER
) -> tuple[tuple[str, ...], int] | None:
    """The most repeated ``size``-gram when it recurs ``times``+ and repeats cover the text.

    Coverage (tokens inside n-grams seen 3+ times) keeps a name or a slogan said four times in
    a long answer from counting as a loop.
    """
    if len(tokens) < size * times:
        return None
    frequent = {t for t, n in frequency.items() if n >= times}
    if not frequent:
        return None  # every token of a repeated n-gram recurs at least as often
    if sum(n for n in frequency.values() if n >= 3) < cover * len(tokens):
        return None  # repeats could not cover enough of the text
    grams = list(zip(*(tokens[i:] for i in range(size)), strict=False))
    counts = Counter(g for g in grams if g[0] in frequent and g[-1] in frequent)
    if not counts:
        return None
    gram, count = counts.most_common(1)[0]
    if count < times:
        return None
    covered = bytearray(len(tokens))
    for i, g in enumerate(grams):
        if counts[g] >= 3:
            covered[i : i + size] = b"\x01" * size
    return (gram, count) if covered.count(1) >= cover * len(tokens) else None


def _same_token_streak(words: list[str], limit: int = _STREAK) -> tuple[str, int] | None:
    best: tuple[str, int] | None = None
    streak = 1
    for previous, word in zip(words, words[1:], strict=False):
        streak = streak + 1 if word == previous else 1
        if streak >= limit and (best is None or streak > best[1]):
            best = (word, streak)
    return best
