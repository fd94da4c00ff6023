"""Entry point: the global ``--config`` option and the command groups.

A command-line run imports only the module of the command it names, so read commands such as
``canary status`` start fast; importing ``app`` from here (tests, --help) registers them all.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

_app = typer.Typer(
    name="canary",
    help="Find degraded OpenRouter providers by pinned probes, quarantine them, publish the "
    "ignore list.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
HELP_OPTIONS = ("-h", "--help")

# Each module has register(app) and imports heavy libraries inside its commands only.
COMMAND_MODULES = ("db", "sim", "probe", "rounds", "ops", "drift", "demo")
MODULE_OF_COMMAND = {
    "db": "db",
    "sim": "sim",
    "probe": "probe",
    "round": "rounds",
    "serve": "rounds",
    "drill": "rounds",
    "status": "ops",
    "quarantine": "ops",
    "exclude": "ops",
    "ignore-list": "ops",
    "history": "ops",
    "audit": "ops",
    "drift": "drift",
    "demo": "demo",
}
_registered: set[str] = set()


def _print_version(value: bool) -> None:
    if value:
        from canary import __version__

        typer.echo(f"canary {__version__}")
        raise typer.Exit()


@_app.callback()
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


def _register(names: Sequence[str] = COMMAND_MODULES) -> typer.Typer:
    for name in names:
        if name not in _registered:
            importlib.import_module(f"canary.cli.{name}").register(_app)
            _registered.add(name)
    return _app


def command_modules(argv: Sequence[str]) -> tuple[str, ...]:
    """The modules a command line needs: the named command's alone, else all (help, errors)."""
    args = list(argv)
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option == "--config" and args:
            args.pop(0)
    if args and args[0] in MODULE_OF_COMMAND and not set(HELP_OPTIONS) & set(args):
        return (MODULE_OF_COMMAND[args[0]],)
    return COMMAND_MODULES


def __getattr__(name: str) -> Any:
    if name == "app":
        return _register()
    raise AttributeError(name)


# An operator command has closed its store and has nothing left to clean up when it returns:
# it skips the interpreter's teardown of every imported module (about 60 ms of a 0.4 s run).
QUICK_EXIT = {("ops",), ("drift",)}


def main() -> None:
    modules = command_modules(sys.argv[1:])
    if modules in QUICK_EXIT:
        # A one-shot operator command frees what it builds by reference counting; the cyclic
        # collector would only walk its imports and rows again and again (about 0.1 s of
        # `canary status` at 2,000 endpoints).
        gc.disable()
    try:
        _register(modules)()
    except SystemExit as done:
        if modules not in QUICK_EXIT:
            raise
        _exit_now(done.code)


def _exit_now(code: str | int | None) -> None:
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # the reader went away (`canary status | head`): nothing to tell it
            pass
    os._exit(code or 0)
