"""Entry point: the global ``--config`` option and the command groups."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="canary",
    help="Find degraded OpenRouter providers by pinned probes, quarantine them, publish the ignore list.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Each module has register(app); kept light at import time so read commands start fast.
COMMAND_MODULES = ("db", "sim", "probe", "rounds", "ops", "drift", "demo")


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Settings file (default: ./canary.toml when present)."),
    ] = None,
) -> None:
    ctx.obj = {"config": config}


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"canary.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"canary.cli.{name}":
                raise
            continue
        module.register(app)


_register()


def main() -> None:
    app()
