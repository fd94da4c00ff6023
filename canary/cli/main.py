"""Entry point: the global ``--config`` option and the command groups.

A command-line run imports only the module of the command it names, so read commands such as
``canary status`` start fast; importing ``app`` from here (tests, --help) registers them all.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click import Context as ClickContext  # typer carries its own click
from typer._click import Parameter
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer.core import TyperArgument, TyperCommand, TyperGroup, _TyperParameter


class _ReadableArgument(TyperArgument):
    """An argument named in help by its metavar alone: ``ID`` in the usage line (``[ID]`` when
    optional), with no ``<int>`` beside it in the Arguments panel."""

    def display_type_rich(self, ctx: ClickContext) -> str | None:
        return None

    def get_usage_pieces(self, ctx: ClickContext) -> list[str]:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return [name if self.nargs == 1 else f"{name}..."]


def _every_param(command: TyperCommand | TyperGroup, ctx: ClickContext) -> Iterator[Parameter]:
    """The parameters of ``command`` and of every command below it, help options included."""
    help_option = command.get_help_option(ctx)
    yield from (*command.params, *((help_option,) if help_option else ()))
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            if isinstance(sub, TyperCommand | TyperGroup):
                yield from _every_param(sub, ctx)


def readable_metavar(param: Parameter) -> None:
    """Name what an option or an argument takes in help as a word (MODEL, PROVIDER, FILE, ID),
    not as a Python type (``<str>``, ``<list[str]>``, ``<int>``) nor in braces (``{ID}``); flags
    (--help, --json) take nothing and show nothing."""
    if isinstance(param, TyperArgument):
        if param.metavar is None:
            param.metavar = (param.name or "").upper()
        param.__class__ = _ReadableArgument  # the same object, shown as a word
    elif param.metavar is None and param.param_type_name == "option":
        param.metavar = "" if getattr(param, "is_flag", False) else (param.name or "").upper()


# A value already of its parameter's type (a default, a flag's bool, a text, an unset option's
# None) is taken as it is; exact types, since a bool is no int.
_NONE = type(None)
_TAKEN_AS_IS: dict[Any, tuple[type, ...]] = {
    str: (str,), str | None: (str, _NONE), int: (int,), int | None: (int, _NONE),
    bool: (bool,), bool | None: (bool, _NONE),
}  # fmt: skip


@dataclass(frozen=True)
class _LazyCoercion(RuntimeParam):
    """Typer builds a pydantic adapter for a parameter before coercing its value, even for a
    value it will not coerce (an option left unset is None): about 0.1 s of an operator command's
    start-up (pydantic's validators, one schema per option). This coercion builds the adapter
    when a value comes that needs converting (``--limit 20``: text for a number), and takes a
    value that already has its parameter's type as it is."""

    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: Any, ctx: ClickContext) -> Any:
        if type(value) in _TAKEN_AS_IS.get(self.annotation, ()):
            return value  # what pydantic's validation would return
        return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)


def _coerce_lazily(param: Parameter) -> None:
    if isinstance(param, _TyperParameter) and param._runtime_param is None:
        d = param.type_descriptor
        param._runtime_param = _LazyCoercion(d.parameter_info, d.annotation, d)


class _Canary(TyperGroup):
    """The root command: before the command line is parsed (--help included), every command's
    options get readable metavars and a coercion that costs nothing until a value needs one."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        for param in _every_param(self, ctx):
            readable_metavar(param)
            _coerce_lazily(param)
        return super().parse_args(ctx, args)


_app = typer.Typer(
    cls=_Canary,
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
        str | None,  # text, not Path: a text value needs no pydantic adapter (_LazyCoercion)
        typer.Option(
            "--config", metavar="FILE", help="Settings file (default: ./canary.toml when present)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    ctx.obj = {"config": None if config is None else Path(config)}


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
