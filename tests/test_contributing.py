"""CONTRIBUTING.md names every module in one line, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _modules() -> set[str]:
    found = set()
    for root in ("canary", "client/canary_client"):
        for path in (REPO / root).rglob("*.py"):
            if path.name == "__init__.py" and not path.read_text().strip():
                continue  # an empty package marker says nothing
            found.add(path.relative_to(REPO).as_posix())
    return found


def test_every_module_is_named_in_one_line() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text()
    section = text.split("\n## Modules\n", 1)[1]
    named = re.findall(r"^- `([^`]+\.py)`: \S", section, re.M)
    assert len(named) == len(set(named))
    assert set(named) == _modules()
