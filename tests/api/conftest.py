"""Fixtures for the API tests: the API over the module's store (tests/conftest.py's, SQLite and
PostgreSQL), seeded through its own API: ``api`` a model of the test's own, ``reader`` one that a
module's read-only tests share."""

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


@pytest.fixture(scope="module")
def reader(store: Store) -> Api:
    """One seeded model, its service and its app, shared by a module's tests that only read: none
    of them moves its clock or writes, so none needs a model of its own (seeding one and building
    its app is about 90 ms)."""
    return Api(store)
