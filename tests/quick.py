"""How much of each property test the inner loop runs.

`make check` passes ``--hypothesis-profile=quick`` (registered in tests/conftest.py): there every
property test tries a quarter of its examples (at least 10, or all when it asks for fewer). `make
test` and a plain `pytest` run the default profile and so every example the tests ask for.
"""

from __future__ import annotations

from hypothesis import settings


def examples(thorough: int) -> int:
    """``thorough`` under the default profile (100 examples); its share under another."""
    return max(min(thorough, 10), thorough * settings().max_examples // 100)
