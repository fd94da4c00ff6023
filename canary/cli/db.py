"""``canary db upgrade`` and ``canary db current``: the schema, through Alembic."""

from __future__ import annotations

import typer
from sqlalchemy.exc import SQLAlchemyError

from canary.cli.common import fail, refuse_missing_sqlite, settings_from
from canary.config.settings import redact_url
from canary.service.logs import first_line
from canary.store.repository import Store

db_app = typer.Typer(
    name="db", help="Database schema: bring it to head, show its revision.", no_args_is_help=True
)


@db_app.command("upgrade")
def upgrade(ctx: typer.Context) -> None:
    """Bring the configured database to the latest schema revision."""
    from canary.store.migrate import MigrationsNotFound

    settings = settings_from(ctx)
    shown = redact_url(settings.database_url)
    try:
        with Store(settings.database_url) as store:
            reached = store.upgrade()
    except (SQLAlchemyError, MigrationsNotFound, OSError) as exc:
        fail(f"cannot upgrade {shown}: {type(exc).__name__}: {first_line(exc)}", code=1)
    typer.echo(f"{shown}: at revision {reached} (head)")


@db_app.command("current")
def current(ctx: typer.Context) -> None:
    """Show the database's schema revision and the head revision."""
    from canary.store.migrate import MigrationsNotFound, head_revision

    settings = settings_from(ctx)
    shown = redact_url(settings.database_url)
    refuse_missing_sqlite(settings.database_url, "run `canary db upgrade` to create it")
    try:
        head = head_revision()
        with Store(settings.database_url) as store:
            revision = store.current_revision()
    except (SQLAlchemyError, MigrationsNotFound, OSError) as exc:
        fail(f"cannot read {shown}: {type(exc).__name__}: {first_line(exc)}", code=1)
    state = "up to date" if revision == head else "behind: run `canary db upgrade`"
    typer.echo(f"{shown}: revision {revision or 'none'}, head {head} ({state})")
    if revision != head:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
