"""The status table's writer: aligned columns in any script, colour only when wanted."""

from __future__ import annotations

import io

import pytest

from canary.cli.ops_status import floor_line
from canary.cli.plain_table import Span, cell, colour_wanted, render, styled

ANSI_RED_BOLD = "\x1b[1;31m"


def test_columns_line_up_whatever_the_script_and_the_style() -> None:
    rows = [
        (cell("alpha"), (Span("schema ", ""), Span("✗", "red"))),
        (cell("日本"), cell("ok", "green")),  # two wide characters take four cells
    ]
    text = render("m  (mode observe)", ("Provider", "Last round"), rows, colour=False)
    lines = text.splitlines()
    assert lines[0] == "m  (mode observe)"
    body = lines[1:]
    widths = {len(line.replace("日", "日 ").replace("本", "本 ")) for line in body}
    assert widths == {len(body[0])}, "\n".join(body)
    assert "│ alpha    │ schema ✗   │" in text
    assert "│ 日本     │ ok         │" in text


def test_styles_are_written_only_with_colour() -> None:
    spans = (Span("FLOOR BREACHED", "bold red"), Span(": 1 usable"))
    assert styled(spans, colour=False) == "FLOOR BREACHED: 1 usable"
    assert styled(spans, colour=True) == f"{ANSI_RED_BOLD}FLOOR BREACHED\x1b[0m: 1 usable"


def test_a_breached_floor_is_red_and_says_so() -> None:
    doc = {
        "usable_endpoints": 1,
        "capacity_floor": 2,
        "withheld": ["c"],
        "floor_breached": True,
    }
    line = styled(floor_line(doc), colour=True)
    assert line.startswith(f"{ANSI_RED_BOLD}FLOOR BREACHED\x1b[0m")
    assert "1 usable endpoint(s), floor 2; withheld to hold it: c" in line


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("env", "tty", "wanted"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"TERM": "dumb"}, True, False),
    ],
)
def test_colour_follows_the_terminal_and_the_conventions(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, wanted: bool
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert colour_wanted(_Tty() if tty else io.StringIO()) is wanted
