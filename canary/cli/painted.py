"""Lines of styled text written as rich would write them, for output of thousands of lines.

``canary status`` prints a row per endpoint of every model: 2,000 rows for a 200-model
catalog. rich's Table measures and wraps every cell, and even a rich Text per line goes through
its segment pipeline: at that size, most of the command's time (docs/performance.md). Its cells
are short and never wrapped, so they are padded into columns here, and each styled piece is
turned into escape codes by rich's own :meth:`rich.style.Style.render`, for the console's colour
system (none when the output is not a terminal; no colour under ``NO_COLOR``, as rich decides).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import COLOR_SYSTEMS, Console
from rich.style import Style

Piece = tuple[str, str]
"""A run of text and its rich style ("" for none)."""
Cell = Sequence[Piece]


def cell(text: str, style: str = "") -> Cell:
    return ((text, style),)


class Painter:
    """Pieces of text as the console would print them; each (text, style) rendered once."""

    def __init__(self, console: Console) -> None:
        self._system = COLOR_SYSTEMS.get(console.color_system or "")
        self._no_color = console.no_color
        self._done: dict[Piece, str] = {}

    def line(self, pieces: Iterable[Piece]) -> str:
        return "".join(self._styled(piece) if piece[1] else piece[0] for piece in pieces)

    def _styled(self, piece: Piece) -> str:
        done = self._done.get(piece)
        if done is None:
            style = Style.parse(piece[1])
            if self._no_color:
                style = style.without_color
            done = self._done[piece] = style.render(piece[0], color_system=self._system)
        return done


def columns(
    painter: Painter, title: str, names: Sequence[str], rows: Sequence[Sequence[Cell]]
) -> list[str]:
    """The title, a bold header and a line per row, cells two spaces apart, never wrapped (a
    narrower terminal wraps the line)."""
    widths = [cell_len(n) for n in names]
    lengths = [[sum(cell_len(text) for text, _ in c) for c in row] for row in rows]
    for row in lengths:
        widths = [max(w, n) for w, n in zip(widths, row, strict=True)]
    last = len(names) - 1
    lines = [painter.line([(title, "italic")])]
    header = [cell(n, "bold") for n in names]
    for cells, sizes in ((header, [cell_len(n) for n in names]), *zip(rows, lengths, strict=True)):
        pieces: list[Piece] = []
        for i, (c, size) in enumerate(zip(cells, sizes, strict=True)):
            pieces.extend(c)
            if i < last:
                pieces.append((" " * (widths[i] - size + 2), ""))
        lines.append(painter.line(pieces).rstrip(" "))
    return lines
