"""Fixtures for the API tests: the API over the module's store (tests/conftest.py's, SQLite and
PostgreSQL), seeded through its own API."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ops_seed import Api

from canary.store.repository import Store


@pytest.fixture
def make_api(store: Store) -> Callable[..., Api]:
    def make(**kwargs: object) -> Api:
        return Api(store, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()
