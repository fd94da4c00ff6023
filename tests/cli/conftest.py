"""Fixtures for the operator CLI tests: a seeded store, a settings file, and typer's runner."""

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
    from canary.logs import configure_logging

    configure_logging()


@pytest.fixture(scope="module")
def cli_store(store_url: str) -> Iterator[Store]:
    store = Store(store_url)
    store.upgrade()
    yield store
    store.dispose()


_count = iter(range(1, 10_000))


@pytest.fixture
def fleet(cli_store: Store, tmp_path: Path) -> Fleet:
    return Fleet(cli_store, tmp_path, f"acme/cli-{next(_count)}")


@pytest.fixture
def make_fleet(cli_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Fleet]:
    return lambda: Fleet(cli_store, tmp_path_factory.mktemp("fleet"), f"acme/cli-{next(_count)}")
