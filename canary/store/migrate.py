"""Alembic, driven programmatically: no alembic.ini is needed to bring a database to head."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, func, select

from canary.config.bundled import bundled_dir

# A fixed 64-bit number: the key of the advisory lock that serialises concurrent upgrades.
UPGRADE_LOCK_KEY = 0x63616E617279  # "canary"


class MigrationError(RuntimeError):
    """An upgrade left the database inconsistent; it was rolled back."""


class MigrationsNotFound(LookupError):
    def __init__(self, tried: list[Path]) -> None:
        super().__init__("alembic migrations not found (tried " + ", ".join(map(str, tried)) + ")")


def migrations_dir() -> Path:
    """``$CANARY_MIGRATIONS_DIR`` when set (an override used as given), else the migrations
    installed with the package (:func:`canary.config.bundled.bundled_dir`). Never the working
    directory's: an unrelated ``migrations/`` there must not migrate canary's database."""
    env = os.environ.get("CANARY_MIGRATIONS_DIR")
    path = Path(env) if env else bundled_dir("migrations")
    if not (path / "env.py").is_file():
        raise MigrationsNotFound([path])
    return path


def alembic_config(url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        # ConfigParser interpolation: a literal % in a URL must be doubled.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise MigrationsNotFound([migrations_dir()])
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the database to ``revision`` in one transaction; returns the revision reached.

    On PostgreSQL a transaction-level advisory lock makes concurrent upgrades (two replicas
    starting together) wait for each other; the second one then finds nothing to do.
    """
    config = alembic_config()
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            # SQLite rebuilds a table to change a constraint (Alembic's batch mode): the tables
            # that refer to it must not block the drop. Off outside the transaction (inside it
            # the pragma does nothing), checked and back on after it.
            _pragma(conn, "PRAGMA foreign_keys=OFF")
        try:
            conn.execution_options(canary_write=True)
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(select(func.pg_advisory_xact_lock(UPGRADE_LOCK_KEY)))
                config.attributes["connection"] = conn
                command.upgrade(config, revision)
                if sqlite and conn.exec_driver_sql("PRAGMA foreign_key_check").first():
                    raise MigrationError("the upgrade left rows that refer to missing rows")
                return MigrationContext.configure(conn).get_current_revision()
        finally:
            if sqlite:
                _pragma(conn, "PRAGMA foreign_keys=ON")


def _pragma(conn: Connection, statement: str) -> None:
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute(statement)
