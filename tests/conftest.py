"""Shared fixtures: a fresh PostgreSQL database, and a store URL on each backend.

Both are module-scoped: one database per test module, so tests in a module share it (use distinct
model names). Postgres tests are skipped when the server is unreachable, unless
CANARY_REQUIRE_POSTGRES=1, in which case they fail.

Checks that need shared test data absent from a fresh clone (tests/shared_data.py) are summed up
in one line at the end of the run, with the variable that points them at a copy, instead of one
skip line each.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from shared_data import DATA_SETS, SKIP_PREFIX

NO_SHARED_DATA = "skipped (no shared data)"

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


def _skip_reason(report: pytest.TestReport) -> str | None:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return None


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    reason = _skip_reason(report)
    if reason is not None and reason.startswith(SKIP_PREFIX):
        return NO_SHARED_DATA, "s", "SKIPPED"
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.stats.get(NO_SHARED_DATA, [])
    if not skipped:
        return
    parts = []
    for data in DATA_SETS:
        mine = [r for r in skipped if _skip_reason(r) == data.reason]
        if mine:
            files = sorted({r.nodeid.split("::")[0] for r in mine})
            parts.append(
                f"{len(mine)} that need {data.name} (set {data.variable} to a copy; "
                f"now {data.path}): {', '.join(files)}"
            )
    terminalreporter.write_line(
        f"{SKIP_PREFIX}skipped {len(skipped)} checks: " + "; ".join(parts), yellow=True
    )
