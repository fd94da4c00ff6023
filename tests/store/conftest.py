from __future__ import annotations

from collections.abc import Iterator

import pytest

from canary.store import Store


@pytest.fixture(scope="module")
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    s.upgrade()
    yield s
    s.dispose()


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model id of this test's own, so tests sharing a module's database never meet."""
    return f"acme/{request.function.__name__}"
