"""End to end: the real simulator, the real OpenRouter client, the real Prober and lingua."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _logging_back_to_stderr() -> Iterator[None]:
    """`canary probe` points structlog at the CLI runner's stderr, which the runner then closes."""
    yield
    from canary.service.logs import configure_logging

    configure_logging()
