"""Fixtures for the operator CLI tests: fleets seeded in the module's store (tests/conftest.py),
a settings file, and typer's runner."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_fleet import Fleet  # noqa: E402

from canary.store.repository import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _logging_back_to_stderr() -> Iterator[None]:
    """The commands point structlog at the runner's stderr, which the runner then closes."""
    yield
    from canary.service.logs import configure_logging

    configure_logging()


_count = iter(range(1, 10_000))


@pytest.fixture
def fleet(store: Store, tmp_path: Path) -> Fleet:
    return Fleet(store, tmp_path, f"acme/cli-{next(_count)}")


@pytest.fixture
def make_fleet(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Fleet]:
    return lambda: Fleet(store, tmp_path_factory.mktemp("fleet"), f"acme/cli-{next(_count)}")
