"""The status lines: a breached floor is red and says so; colour only when wanted (rich decides)."""

from __future__ import annotations

import pytest
from rich.console import Console

from canary.cli.ops_status import floor_line
from canary.cli.painted import Painter

BREACHED = {"usable_endpoints": 1, "capacity_floor": 2, "withheld": ["c"], "floor_breached": True}
ANSI_RED_BOLD = "\x1b[1;31m"


def _printed(force_terminal: bool | None) -> str:
    console = Console(force_terminal=force_terminal, width=200)
    return Painter(console).line(floor_line(BREACHED))  # type: ignore[arg-type]


def test_a_breached_floor_is_red_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    line = _printed(force_terminal=True)
    assert line.startswith(f"{ANSI_RED_BOLD}FLOOR BREACHED\x1b[0m")
    assert "1 usable endpoint(s), floor 2; withheld to hold it: c" in line


@pytest.mark.parametrize(
    ("env", "tty", "coloured"),
    [({}, True, True), ({}, False, False), ({"NO_COLOR": "1"}, True, False)],
)
def test_colour_follows_the_terminal_and_the_conventions(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, coloured: bool
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ("31m" in _printed(force_terminal=tty)) is coloured  # red; NO_COLOR keeps bold
