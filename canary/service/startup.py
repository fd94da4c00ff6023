"""Start-up of `canary serve`: the listening socket and the store, each failing in one line.

The socket is bound and listening before anything else, so a taken port fails at once. The store
is opened and migrated; while it is unreachable (PostgreSQL still starting) it is retried with
exponential backoff, for at most ``startup_wait_s``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from canary.config.settings import Settings, redact_url
from canary.service.logs import first_line, get_logger
from canary.store.repository import Store

log = get_logger("canary.service.startup")

FIRST_RETRY_S = 0.5
MAX_RETRY_S = 10.0


class StartupError(RuntimeError):
    """Start-up cannot go on; the message is one readable line (no secret in it)."""


class StoppedDuringStartup(SystemExit):
    """A stop (SIGTERM, SIGINT) asked for while start-up waited: not a failure, so the process
    ends with status 0 wherever this is raised, after the clean-up on its way out."""

    def __init__(self) -> None:
        super().__init__(0)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound and listening now: a taken port fails here."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def open_store(
    settings: Settings,
    *,
    wait: Callable[[float], bool],
    clock: Callable[[], float] = time.monotonic,
) -> Store:
    """The store, migrated to head. An unreachable PostgreSQL is retried with exponential
    backoff (``wait(delay)`` returns True when start-up should give up at once, e.g. on SIGTERM:
    then :class:`StoppedDuringStartup`) until ``startup_wait_s`` has passed; any other store
    problem fails at once, and so does a SQLite file that cannot be opened (a local file does
    not come back by waiting)."""
    from canary.store.migrate import MigrationsNotFound

    shown = redact_url(settings.database_url)
    problem = sqlite_path_problem(settings.database_url)
    if problem:
        raise StartupError(f"cannot open the store at {shown}: {problem}")
    server = not _is_sqlite(settings.database_url)
    deadline = clock() + settings.startup_wait_s
    delay = FIRST_RETRY_S
    attempt = 0
    while True:
        attempt += 1
        store = Store(settings.database_url)
        try:
            store.upgrade()
            return store
        except OperationalError as exc:
            store.dispose()
            if not server:
                raise StartupError(
                    f"cannot open the store at {shown}: {first_line(exc.orig or exc)}"
                ) from None
            left = deadline - clock()
            if left <= 0:
                raise StartupError(
                    f"cannot reach the store at {shown} (tried {_times(attempt)} in "
                    f"{settings.startup_wait_s:g} s): {first_line(exc.orig or exc)}"
                ) from None
            log.warning(
                "store_unreachable",
                database=shown,
                attempt=attempt,
                retry_in_s=round(min(delay, left), 3),
                error=first_line(exc.orig or exc),
            )
            if wait(min(delay, left)):
                log.info("stopped", database=shown, during="start-up, waiting for the store")
                raise StoppedDuringStartup from None
            delay = min(delay * 2, MAX_RETRY_S)
        except (DBAPIError, MigrationsNotFound) as exc:
            store.dispose()
            raise StartupError(f"cannot open the store at {shown}: {first_line(exc)}") from None


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path_problem(url: str) -> str | None:
    """Why a SQLite database file cannot be created or written, or None (PostgreSQL: None)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database).expanduser().absolute()
    if path.is_dir():
        return f"{path} is a directory"
    if path.exists():
        return None if os.access(path, os.R_OK | os.W_OK) else f"{path} is not writable"
    if not path.parent.is_dir():
        return f"directory {path.parent} does not exist"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"directory {path.parent} is not writable"
    return None
