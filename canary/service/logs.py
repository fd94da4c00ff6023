"""structlog set-up: readable on a terminal, JSON lines otherwise, with secrets masked.

What the libraries log through the standard library (APScheduler's skipped runs, uvicorn's errors,
SQLAlchemy's warnings) is rendered the same way, from WARNING up: a JSON log holds only JSON lines.
"""

from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

    from canary.config.settings import Settings

_SECRETS: set[str] = set()
_SECRET_KEYS = re.compile(r"(api_key|token|authorization|password|secret)", re.I)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"']+", re.I)
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")


def register_secret(value: str) -> None:
    """Remember a secret so that it is masked wherever it would be logged."""
    if value and len(value) >= 4:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "***")
    text = _BEARER.sub(r"\1***", text)
    return _URL_PASSWORD.sub(r"\1***@", text)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (at most 200 characters), with secrets masked."""
    text = str(exc).strip()
    return scrub(text.splitlines()[0][:200] if text else "")


def _scrub_value(key: str, value: Any) -> Any:
    if _SECRET_KEYS.search(key) and isinstance(value, str) and value:
        return "***"
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_value(str(k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_value(key, v) for v in value]
    return value


def _mask_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    for key in list(event_dict):
        event_dict[key] = _scrub_value(key, event_dict[key])
    return event_dict


class _StderrLogger:
    """Writes to whatever sys.stderr is at the time of the call (tests swap it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


@dataclass
class _Config:
    fmt: str = "auto"  # auto | console | json
    stream: TextIO | None = None  # None: whatever sys.stderr is at the time
    level: int = logging.INFO
    applied: bool = False  # structlog configured with these


_config = _Config()
_stdlib_formatter: logging.Formatter | None = None
LIBRARY_LEVEL = logging.WARNING


class _LibraryHandler(logging.Handler):
    """The standard library's records, rendered like canary's own lines (the formatter, and so
    structlog, is built on the first record)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _ensure_applied()
            assert _stdlib_formatter is not None
            print(_stdlib_formatter.format(record), file=_config.stream or sys.stderr, flush=True)
        except Exception:  # noqa: BLE001  # logging's contract: a record never raises (closed stream too)
            self.handleError(record)


_library_handler = _LibraryHandler(LIBRARY_LEVEL)


def _route_library_logs() -> None:
    """The root logger writes through :class:`_LibraryHandler` (added once, however often the
    logging is configured), from :data:`LIBRARY_LEVEL` up."""
    root = logging.getLogger()
    if _library_handler not in root.handlers:
        root.addHandler(_library_handler)
    if root.level == logging.NOTSET or root.level > LIBRARY_LEVEL:
        root.setLevel(LIBRARY_LEVEL)


def configure_logging(
    settings: Settings | None = None, stream: TextIO | None = None, level: int = logging.INFO
) -> None:
    """Set how canary and the libraries it uses log."""
    if settings is not None:
        register_secret(settings.openrouter.api_key.get_secret_value())
        register_secret(settings.admin_token.get_secret_value())
        for hook in settings.webhooks:
            register_secret(hook.secret.get_secret_value())
        for target in (settings.heartbeat, *settings.notifiers):
            register_secret(target.url.get_secret_value())
    _config.fmt = settings.log_format if settings is not None else "auto"
    _config.stream, _config.level = stream, level
    _route_library_logs()
    if "structlog" in sys.modules:  # loggers handed out take the new configuration at once
        _apply()
    else:
        _config.applied = False


def _ensure_applied() -> None:
    # structlog is imported on the first logger or library record, not with this module: a
    # command that logs nothing (`canary status`) does not pay for it and for the rich
    # traceback and pygments modules it brings
    if not _config.applied:
        _apply()


def _apply() -> None:
    global _stdlib_formatter
    import structlog

    _config.applied = True
    stream, fmt = _config.stream, _config.fmt
    if fmt == "auto":
        fmt = "console" if getattr(stream or sys.stderr, "isatty", lambda: False)() else "json"
    renderer: Processor = (
        structlog.dev.ConsoleRenderer(colors=True)
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    stamped: list[Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    _stdlib_formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*stamped, structlog.stdlib.add_logger_name],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            _mask_secrets,
            renderer,
        ],
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *stamped,
            structlog.processors.format_exc_info,
            _mask_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_config.level),
        logger_factory=(
            structlog.PrintLoggerFactory(file=stream)
            if stream is not None
            else lambda *_: _StderrLogger()
        ),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "canary") -> FilteringBoundLogger:
    """A structlog logger (structlog binds it to the configuration on its first use)."""
    _ensure_applied()
    import structlog

    return cast("FilteringBoundLogger", structlog.get_logger(name))
