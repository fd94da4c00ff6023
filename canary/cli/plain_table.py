"""A table written straight to text: the shape of rich's default table, none of its machinery.

``canary status`` prints a row per endpoint of every watched model; through rich's Table that is
about 0.2 s of CPU for 300 rows (measuring, wrapping and cropping every cell through its segment
pipeline), a third of the command's budget. Status needs none of that: its cells are short and
never wrapped (a terminal narrower than the table wraps or ``less -S`` scrolls, as for any wide
output). Styles are ANSI colour codes, written only when colour is wanted (a terminal, and no
``NO_COLOR``; ``FORCE_COLOR`` forces it), as rich decides.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NamedTuple, TextIO

from rich.cells import cell_len

_SGR = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "magenta": "35",
    "dark_orange": "38;5;208",
}


class Span(NamedTuple):
    """A run of text in one style (a space-separated list of :data:`_SGR` names, or none)."""

    text: str
    style: str = ""


Cell = Sequence[Span]


def cell(text: str, style: str = "") -> Cell:
    return (Span(text, style),)


def colour_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def styled(spans: Cell, colour: bool) -> str:
    if not colour:
        return "".join(s.text for s in spans)
    out = []
    for s in spans:
        codes = ";".join(_SGR[name] for name in s.style.split() if name in _SGR)
        out.append(f"\x1b[{codes}m{s.text}\x1b[0m" if codes and s.text else s.text)
    return "".join(out)


def _laid(spans: Cell, colour: bool) -> tuple[str, int]:
    """A cell as written and its width in terminal cells."""
    text = spans[0].text if len(spans) == 1 else "".join([s.text for s in spans])
    width = len(text) if text.isascii() else cell_len(text)
    return (styled(spans, colour=True) if colour else text), width


def render(title: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]], colour: bool) -> str:
    """``title`` then the table, in the heavy-headed box rich draws by default."""
    heads = [cell(c, "bold") for c in columns]
    laid = [[_laid(c, colour) for c in row] for row in (heads, *rows)]
    widths = [max(column) for column in zip(*([w for _, w in row] for row in laid), strict=True)]

    def line(cells: Sequence[tuple[str, int]], bar: str) -> str:
        parts = [
            " " + text + " " * (w - used + 1) for (text, used), w in zip(cells, widths, strict=True)
        ]
        return bar + bar.join(parts) + bar

    def rule(left: str, fill: str, middle: str, right: str) -> str:
        return left + middle.join(fill * (w + 2) for w in widths) + right

    out = [
        title,
        rule("┏", "━", "┳", "┓"),
        line(laid[0], "┃"),
        rule("┡", "━", "╇", "┩"),
        *(line(row, "│") for row in laid[1:]),
        rule("└", "─", "┴", "┘"),
    ]
    return "\n".join(out)


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text + "\n")
