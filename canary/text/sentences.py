"""Cut an answer into sentences and weigh how much language evidence each one carries."""

from __future__ import annotations

import re

# Markup that says nothing about the language: code, links, addresses.
_NOISE = re.compile(
    r"```.*?(?:```|$)"  # fenced code (an unclosed fence runs to the end)
    r"|`[^`\n]*`"  # inline code
    r"|\]\([^)\s]*\)"  # the target of a Markdown link
    r"|<[^>\n]{1,200}>"  # HTML-ish tags
    r"|\b(?:https?://|www\.)\S+"  # URLs
    r"|\b[\w.+-]+@[\w-]+\.[\w.]+",  # e-mail addresses
    re.DOTALL,
)
# A sentence ends at Western punctuation followed by space, at CJK/Arabic punctuation
# (no space needed), or at a line break.
_END = re.compile(
    r"[.!?…]+[\"'”’»)\]*_]*\s+"
    r"|[。！？؟]+[」』”’)）*_]*\s*"
    r"|\n"
)
# An initial or a title before a period is not a sentence end ("J. Smith", "Dr. Silva").
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:\w|Dr|Dra|Mr|Mrs|Ms|Sr|Sra|Jr|St|Prof|Nr|Hr|Fr|Mme|Mlle)$"
)
_NOISE_HINT = re.compile(r"[`<@]|\]\(|https?:|www\.")
_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")  # kana and ideographs
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_LONG_BLOCK = 360  # scripts without sentence punctuation (Thai): cut blocks longer than this
_CHUNK = 160


def clean(text: str) -> str:
    """``text`` without code, links and tags, which carry no language evidence."""
    return _NOISE.sub(" ", text) if _NOISE_HINT.search(text) else text


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` in order; long blocks without punctuation are cut at spaces."""
    pieces: list[str] = []
    start = 0
    for match in _END.finditer(text):
        found = match.group(0)
        if (
            found[0] == "."
            and "\n" not in found
            and _ABBREVIATION.search(text, max(0, match.start() - 6), match.start())
        ):
            continue  # "Dr. Smith", "J. Smith": not a sentence end
        piece = text[start : match.end()].strip()
        if piece:
            pieces.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    out: list[str] = []
    for piece in pieces:
        if len(piece) > _LONG_BLOCK:
            out.extend(_chunks(piece))
        else:
            out.append(piece)
    return out


def _chunks(block: str) -> list[str]:
    """Cut a long unpunctuated block at spaces into pieces of about ``_CHUNK`` characters."""
    words = block.split()
    if len(words) < 2:
        return [block]
    out: list[str] = []
    current: list[str] = []
    size = 0
    for word in words:
        current.append(word)
        size += len(word) + 1
        if size >= _CHUNK:
            out.append(" ".join(current))
            current, size = [], 0
    if current:
        if out and size < _CHUNK // 2:
            out[-1] = out[-1] + " " + " ".join(current)
        else:
            out.append(" ".join(current))
    return out


def weight(sentence: str) -> int:
    """Language evidence in ``sentence``: letters, with ideographs and kana counted 3, Hangul 2."""
    letters = sum(map(str.isalpha, sentence))
    wide = len(_WIDE.findall(sentence)) if not sentence.isascii() else 0
    hangul = len(_HANGUL.findall(sentence)) if wide == 0 and not sentence.isascii() else 0
    return letters + 2 * wide + hangul
