"""Entry point: the global ``--config`` option and the command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from canary.cli import db, demo, drift, ops, probe, reports, rounds, sim

app = typer.Typer(
    name="canary",
    help="Find degraded OpenRouter providers by pinned probes, quarantine them, publish the "
    "ignore list.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from canary import __version__

        typer.echo(f"canary {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", metavar="FILE", help="Settings file (default: ./canary.toml when present)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    ctx.obj = {"config": config}


for _module in (db, sim, probe, rounds, ops, reports, drift, demo):
    _module.register(app)


def main() -> None:
    app()
