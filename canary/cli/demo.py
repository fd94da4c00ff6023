"""`canary demo`: the README's first command."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer

from canary.cli.common import fail, settings_from
from canary.config.definitions import ProbeDefinitionError
from canary.service.logs import configure_logging


def register(app: typer.Typer) -> None:
    app.command("demo", help="Watch canary find and quarantine faulty hosts of a simulated model.")(
        demo
    )


def demo(
    ctx: typer.Context,
    rounds: Annotated[
        int, typer.Option(min=1, metavar="N", help="Rounds to run, then serve on.")
    ] = 4,
    port: Annotated[
        int, typer.Option(metavar="PORT", help="Port of the API and status page.")
    ] = 8080,
    pause: Annotated[
        float, typer.Option(min=0, metavar="SECONDS", help="Real seconds between rounds.")
    ] = 1.0,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="FOLDER",
            help="Folder for the demo's store and settings (default: a new temp folder).",
        ),
    ] = None,
    exit_after: Annotated[
        bool, typer.Option("--exit", help="End after the rounds instead of serving on (scripts).")
    ] = False,
) -> None:
    from canary.service.demo import demo_folder, run_demo
    from canary.store.migrate import MigrationsNotFound

    settings = settings_from(ctx)
    configure_logging(settings, level=logging.WARNING)  # the story is told on stdout
    where = demo_folder(folder)
    try:
        asyncio.run(
            run_demo(
                settings,
                rounds=rounds,
                port=port,
                say=typer.echo,
                folder=where,
                pause_s=pause,
                keep_serving=not exit_after,
            )
        )
    except KeyboardInterrupt:
        typer.echo(f"\nstopped; the store stays in {where}")
    except ProbeDefinitionError as exc:
        fail(f"probe definitions: {exc}", code=1)  # as `canary serve` says it
    except MigrationsNotFound as exc:
        fail(str(exc).strip("'\""), code=1)
