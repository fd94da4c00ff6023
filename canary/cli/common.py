"""Helpers shared by the commands: settings from the context, clean error exits, JSON output."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import typer
from sqlalchemy import make_url

from canary.config.settings import Settings, SettingsError, load_settings
from canary.core.model import iso_utc
from canary.service.logs import configure_logging


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop with ``message`` on stderr, each of its lines (one per problem) after ``canary:``."""
    typer.echo("\n".join(f"canary: {line}" for line in message.splitlines()), err=True)
    raise typer.Exit(code)


def settings_from(ctx: typer.Context) -> Settings:
    root = ctx.find_root()
    config = (root.obj or {}).get("config") if isinstance(root.obj, dict) else None
    try:
        settings = load_settings(config)
    except SettingsError as exc:
        fail(str(exc))
    configure_logging(settings)
    return settings


def require_api_key(settings: Settings, command: str) -> None:
    """Stop (exit 2) when no OpenRouter key is configured: every probe would come back 401, and a
    daemon without one would only look alive. The demo and drills bring the simulator's key."""
    if not settings.openrouter.api_key.get_secret_value().strip():
        fail(
            f"`canary {command}` needs an OpenRouter API key: set OPENROUTER_API_KEY (or "
            "OPENROUTER_API_KEY_FILE, or [openrouter] api_key in the settings file)"
        )


def missing_sqlite_file(url: str) -> Path | None:
    """The SQLite file ``url`` names when it does not exist (PostgreSQL, in-memory: None)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    return None if path.exists() else path


def refuse_missing_sqlite(database_url: str, hint: str) -> None:
    """Stop (exit 1) when ``database_url`` names a SQLite file that does not exist: a command
    that only reads must never create an empty database. ``hint``: how to get one."""
    missing = missing_sqlite_file(database_url)
    if missing is not None:
        from canary.config.settings import redact_url

        fail(f"no database at {missing} ({redact_url(database_url)}): {hint}, or pass --config", 1)


def print_json(value: Any) -> None:
    """``value`` as compact JSON on one line; what JSON cannot encode is written as its str()."""
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    sys.stdout.write(text + "\n")


_FRACTION = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+")


def to_second(value: datetime | str | None) -> str:
    """A time for people, to the second in UTC (``2026-05-01T12:00:03Z``); in a text, every ISO
    time is cut to the second. JSON output keeps the API's full precision."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return iso_utc(value.replace(microsecond=0))
    return _FRACTION.sub(r"\1", value)
