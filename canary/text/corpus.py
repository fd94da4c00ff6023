"""Read the shared multilingual corpus (test data: lingua's test sentences, one per line).

Lines are split on "\\n" only (a C1 control such as U+0085 may sit inside a damaged line).
``clean=True`` drops the lines with encoding damage (cp1252 residue, double-encoded UTF-8), which
would rightly be flagged as corruption and so cannot serve as healthy answers. The shared corpus
was repaired on 2026-12-01 and holds none any more; an upstream copy still does.
"""

from __future__ import annotations

from pathlib import Path

from canary.text.encoding import encoding_corruption


def corpus_file(directory: Path, language: str) -> Path:
    """The sentence file of ``language`` in the corpus ``directory`` (the folder with README.md)."""
    return directory / "lingua-sentences" / f"{language}.txt"


def load_sentences(directory: Path, language: str, *, clean: bool = True) -> list[str]:
    """Sentences of ``language``; with ``clean``, only those without encoding corruption."""
    text = corpus_file(directory, language).read_text(encoding="utf-8")
    lines = [line.strip() for line in text.split("\n")]
    return [line for line in lines if line and not (clean and encoding_corruption(line))]


_ENDS = tuple('.!?…。！？؟"”»)')


def compose(sentences: list[str]) -> str:
    """One answer from corpus lines: a space after a finished sentence, else a line break.

    Lines cut off mid-sentence would otherwise run into the next line and hide its boundary.
    """
    out: list[str] = []
    for sentence in sentences:
        if out:
            out.append(" " if out[-1].endswith(_ENDS) else "\n")
        out.append(sentence)
    return "".join(out)
