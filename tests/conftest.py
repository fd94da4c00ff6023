"""Shared fixtures: a fresh PostgreSQL database, and a store URL on each backend.

Both are module-scoped: one database per test module, so tests in a module share it (use distinct
model names). Postgres tests are skipped when the server is unreachable, unless
CANARY_REQUIRE_POSTGRES=1, in which case they fail.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.pool import NullPool

    admin_url = make_url(os.environ.get("CANARY_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"canary_test_{secrets.token_hex(6)}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        shown = admin_url.render_as_string(hide_password=True)
        reason = f"PostgreSQL unreachable at {shown}: {exc.orig}"
        if os.environ.get("CANARY_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'canary.db'}"
