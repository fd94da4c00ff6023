"""Shared fixtures and the suite's rules.

Fixtures: a fresh PostgreSQL database, a store URL on each backend, and the store itself. The
store is module-scoped: one database per test module (a random name, so parallel workers never
meet), and tests in a module share it (use distinct model names). ``sqlite_store`` is a store of
the test's own, for what needs a database nobody else touches (leases, processes sharing it).
Postgres tests are skipped when the server is unreachable, unless CANARY_REQUIRE_POSTGRES=1, in
which case they fail.

Markers (``make check`` deselects them): ``postgres`` is put on the PostgreSQL half of
``store_url`` and on every test that asks for ``postgres_url``; ``slow`` on tests that start a
process or wait on real time; ``chromium`` on the status page screenshots. A test that starts a
process without the ``slow`` marker fails, naming it, and so does one that connects anywhere
beyond loopback: the inner loop stays fast and offline.

Checks that need shared test data absent from a fresh clone (tests/shared_data.py) are summed up
in one line at the end of the run, with the variable that points them at a copy, instead of one
skip line each.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from shared_data import CHROMIUM_ABSENT, DATA_SETS, SKIP_PREFIX
from sqlite_template import migrated_sqlite

from canary.store.repository import Store

NO_SHARED_DATA = "skipped (no shared data)"
NO_CHROMIUM = "skipped (no chromium)"

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"

# `make check` runs a quarter of every property test's examples (tests/quick.py); `make test`
# runs them all, and warns of a slow strategy (on a loaded machine any strategy is slow)
settings.register_profile("quick", max_examples=25, suppress_health_check=[HealthCheck.too_slow])


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


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'canary.db'}"


@pytest.fixture(scope="module")
def store(store_url: str) -> Iterator[Store]:
    """The module's store, migrated, on each backend (SQLite: from a copy at head)."""
    if store_url.startswith("sqlite:///") and not Path(store_url[len("sqlite:///") :]).exists():
        migrated_sqlite(Path(store_url[len("sqlite:///") :]))
    with Store(store_url) as opened:
        opened.upgrade()
        yield opened


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """A migrated SQLite store of this test's own (``.url`` for a process to open it too)."""
    with Store(migrated_sqlite(tmp_path / "canary.db")) as opened:
        yield opened


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
    # Modules with slow tests first (each module's tests keep their order): parallel workers
    # start the long ones at once rather than finish on them.
    slow = {getattr(item, "module", None) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: getattr(item, "module", None) not in slow)


# -- the suite's rules: no process without `slow`, no connection beyond loopback -----------------

_SPAWNING = {"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork"}
_running: list[pytest.Item] = []  # the test running now (setup, call and teardown)


def _loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
        return True  # a Unix socket, or not an address this rule reads
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a name: resolving it already left the machine's own addresses


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _running:
        return
    if event in _SPAWNING:
        item = _running[-1]
        if item.get_closest_marker("slow") is None:
            raise RuntimeError(
                f"{item.nodeid} starts a process ({event}): mark it @pytest.mark.slow, or keep "
                "it in-process (make check runs no process)"
            )
    elif event == "socket.connect" and not _loopback(args[1]):
        raise RuntimeError(f"{_running[-1].nodeid} connects to {args[1]!r}: tests stay on loopback")


_hooked: list[bool] = []


def pytest_configure(config: pytest.Config) -> None:
    if not _hooked:  # an audit hook stays for the process's life: add it once
        sys.addaudithook(_audit)
        _hooked.append(True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.remove(item)


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
    if reason is not None and reason.startswith(CHROMIUM_ABSENT):
        return NO_CHROMIUM, "s", "SKIPPED"
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    browserless = terminalreporter.stats.get(NO_CHROMIUM, [])
    if browserless:
        files = sorted({r.nodeid.split("::")[0] for r in browserless})
        terminalreporter.write_line(
            f"{CHROMIUM_ABSENT}: skipped {len(browserless)} checks of the status page "
            f"({', '.join(files)}); `.ci/run` installs it",
            yellow=True,
        )
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
