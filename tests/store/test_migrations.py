"""Models and migrations agree on both backends; upgrades are idempotent and safe to race."""

from __future__ import annotations

import re
import threading

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from cli_runner import CliRunner
from sqlalchemy import inspect

from canary.cli.main import app
from canary.store import Store
from canary.store.migrate import head_revision
from canary.store.tables import metadata


def test_upgrade_on_an_empty_database_matches_the_models(store_url: str) -> None:
    store = Store(store_url)
    try:
        assert store.current_revision() is None
        assert store.upgrade() == head_revision()
        with store.engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), metadata
            )
            tables = set(inspect(conn).get_table_names())
        assert diff == []
        assert set(metadata.tables) <= tables
    finally:
        store.dispose()


def test_a_second_upgrade_finds_nothing_to_do(store_url: str) -> None:
    store = Store(store_url)
    try:
        store.upgrade()
        assert store.upgrade() == head_revision()
        assert store.current_revision() == head_revision()
    finally:
        store.dispose()


def test_no_column_holds_a_secret() -> None:
    secret = re.compile(r"(^|_)(key|token|password|secret|authorization)($|_)")
    names = {c.name for table in metadata.tables.values() for c in table.columns}
    assert "prompt_tokens" in names  # counts, not credentials
    assert not {n for n in names if secret.search(n)}


def test_cli_db_upgrade_then_current(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    env = {"CANARY_DATABASE_URL": url, "CANARY_LOG_FORMAT": "json"}
    before = runner.invoke(app, ["db", "current"], env=env)
    assert before.exit_code == 1
    assert "no database at" in before.output  # and none created: `db current` only reads
    done = runner.invoke(app, ["db", "upgrade"], env=env)
    assert done.exit_code == 0, done.output
    assert f"at revision {head_revision()}" in done.output
    after = runner.invoke(app, ["db", "current"], env=env)
    assert after.exit_code == 0
    assert "up to date" in after.output


def test_cli_db_upgrade_never_prints_a_password() -> None:
    runner = CliRunner()
    env = {"CANARY_DATABASE_URL": "postgresql+psycopg://canary:hunter2secret@127.0.0.1:1/nowhere"}
    result = runner.invoke(app, ["db", "upgrade"], env=env)
    assert result.exit_code == 1
    assert "hunter2secret" not in result.output
    assert "canary:***@127.0.0.1:1/nowhere" in result.output


def test_two_processes_upgrading_at_once_both_reach_head(postgres_url: str) -> None:
    # A database of its own: the race must start from an empty schema.
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.pool import NullPool

    url = make_url(postgres_url)
    fresh = f"{url.database}_race"
    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{fresh}"'))
    try:
        race_url = url.set(database=fresh).render_as_string(hide_password=False)
        stores = [Store(race_url), Store(race_url)]
        barrier = threading.Barrier(2)
        reached: list[str | None] = []
        errors: list[BaseException] = []

        def run(store: Store) -> None:
            barrier.wait()
            try:
                reached.append(store.upgrade())
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(s,)) for s in stores]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        for s in stores:
            s.dispose()
        assert errors == []
        assert reached == [head_revision(), head_revision()]
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)'))
        admin.dispose()
