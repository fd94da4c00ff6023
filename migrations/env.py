"""Alembic environment for canary.

Programmatic use (``Store.upgrade()``, ``canary db upgrade``) hands over an open connection in
``config.attributes["connection"]``. From the ``alembic`` command line the URL comes from
``sqlalchemy.url``, else ``$CANARY_DATABASE_URL``, else canary's settings.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from canary.store.engine import make_engine
from canary.store.tables import metadata

config = context.config
target_metadata = metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("CANARY_DATABASE_URL")
    if url:
        return url
    from canary.config.settings import load_settings

    return load_settings().database_url


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as conn:
            conn.execution_options(canary_write=True)
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
