"""Helpers shared by the commands: settings from the context, clean error exits, JSON output."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from canary.settings import Settings


def fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"canary: {message}", err=True)
    raise typer.Exit(code)


def settings_from(ctx: typer.Context) -> Settings:
    from canary.settings import SettingsError, load_settings

    root = ctx.find_root()
    config = (root.obj or {}).get("config") if isinstance(root.obj, dict) else None
    try:
        settings = load_settings(config)
    except SettingsError as exc:
        fail(str(exc))
    from canary.logs import configure_logging

    configure_logging(settings)
    return settings


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (at most 200 characters), with secrets masked."""
    from canary.logs import first_line as line

    return line(exc)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
