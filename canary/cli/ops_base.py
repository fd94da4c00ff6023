"""What the operator commands share: options, the store and settings of one command, output.

What is heavy (the probe definitions, the wiring) is imported inside functions.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from canary.cli.common import fail, refuse_missing_sqlite, settings_from, to_second
from canary.config.definitions import ProbeDefinitionError, load_builtin_exclusions
from canary.config.settings import Settings, redact_url
from canary.core.identity import InvalidTag
from canary.core.model import Exclusion
from canary.service.ignore_list import IgnoreListService
from canary.service.logs import first_line
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store
from canary.views.known import known_models, require_model, require_provider
from canary.views.records import parse_when

if TYPE_CHECKING:
    from canary.rounds.wiring import Wiring

ModelOpt = Annotated[
    str, typer.Option("--model", "-m", metavar="MODEL", help="Model id, author/slug.")
]
OptModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", metavar="MODEL", help="Only this model.")
]
ProviderOpt = Annotated[
    str, typer.Option("--provider", "-p", metavar="PROVIDER", help="Provider tag (routing slug).")
]
ReasonOpt = Annotated[
    str, typer.Option("--reason", "-r", metavar="REASON", help="Why; kept in the audit log.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

STATE_STYLES = {
    "healthy": "green",
    "suspect": "yellow",
    "quarantined": "bold red",
    "excluded": "magenta",
    "unknown": "dim",
}
RESULT_COLOURS = {"pass": "green", "fail": "red", "inconclusive": "yellow"}  # others: dim


# -- plumbing ---------------------------------------------------------------------------------


class Ops:
    """The settings and the store of one command, and the checks every command shares."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.now = datetime.now(UTC)
        self._wiring: Wiring | None = None

    def models(self) -> list[str]:
        return known_models(self.settings.model_ids, self.store)

    def check_model(self, model: str) -> str:
        return require_model(self.settings.model_ids, self.store, model)

    def check_provider(self, model: str, tag: str, *, extra: Sequence[str] = ()) -> str:
        return require_provider(self.store, model, tag, extra)

    def builtin(self) -> tuple[Exclusion, ...]:
        """The built-in list read from its file alone (no full probe load), validated as the
        full load validates it; a bad file stops the command with the same readable line."""
        try:
            return load_builtin_exclusions(self.settings.probes_dir)
        except ProbeDefinitionError as exc:
            fail(f"probe definitions: {exc}")

    def quick_policy_version(self) -> str:
        """The policy version the daemon recorded with the latest round (what it publishes);
        computed from the local probe definitions when no round was recorded yet."""
        latest = self.store.recent_rounds(None, 1)
        return str(latest[0].policy_version) if latest else self.wiring().policy_version

    def wiring(self) -> Wiring:
        if self._wiring is None:
            from canary.config.probe_set import ProbeDefinitionError
            from canary.rounds.wiring import build_wiring

            try:
                self._wiring = build_wiring(self.settings, store=self.store, upgrade=False)
            except ProbeDefinitionError as exc:
                fail(f"probe definitions: {exc}")
        return self._wiring

    def dispose(self) -> None:
        if self._wiring is not None and self._wiring.store is not self.store:
            self._wiring.store.dispose()


@contextmanager
def ops_context(ctx: typer.Context, *, action: str = "use") -> Iterator[Ops]:
    """The settings and store of one command; a store error stops it with one readable line
    ("cannot <action> the store at ...")."""
    settings = settings_from(ctx)
    refuse_missing_sqlite(
        settings.database_url, "start `canary serve` or run `canary db upgrade` first"
    )
    store = Store(settings.database_url)
    ops = Ops(settings, store)
    try:
        with _readable_errors(settings, STORE_ERRORS, action):
            yield ops
    finally:
        ops.dispose()
        store.dispose()


@contextmanager
def _readable_errors(
    settings: Settings, errors: tuple[type[Exception], ...], action: str
) -> Iterator[None]:
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except LookupError as exc:
        fail(str(exc).strip("'\""))
    except InvalidTag as exc:
        fail(str(exc))
    except errors as exc:
        problem = f"{type(exc).__name__}: {first_line(exc)}"
        fail(store_problem(f"cannot {action}", redact_url(settings.database_url), problem), code=1)


# what the drivers say of a table that is not there (SQLite; PostgreSQL's UndefinedTable). A
# PostgreSQL database that does not exist is not one `canary db upgrade` would create.
_NO_SCHEMA = ("no such table", "undefinedtable")


def store_problem(doing: str, where: str, problem: str) -> str:
    """One honest line: a store that cannot be reached is said to be unreachable; only a store
    without canary's tables is asked whether `canary db upgrade` was run."""
    if any(marker in problem.lower() for marker in _NO_SCHEMA):
        return f"{doing} the store at {where}: {problem} (has `canary db upgrade` been run?)"
    return f"{doing} the store at {where}: it is unreachable ({problem})"


def actor() -> str:
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in the environment nor the password database
        return "cli:unknown"


def when(text: str, option: str) -> datetime:
    try:
        return parse_when(text)
    except ValueError:
        fail(f"{option} {text!r} is not an ISO-8601 time (e.g. 2026-05-01T12:00:00Z)")


def console() -> Console:
    # Piped output is read by people too (less, CI logs): do not squeeze it to 80 columns.
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)


def table_of(title: str | None, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", show_lines=False)
    for i, column in enumerate(columns):
        table.add_column(column, no_wrap=i < 2)
    return table


def show(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], empty: str) -> None:
    if not rows:
        console().print(empty)
        return
    table = table_of(title, *columns)
    for row in rows:
        table.add_row(*("" if cell is None else to_second(str(cell)) for cell in row))
    console().print(table)


ROUND_NOTES = {
    "extra": "extra: a round run with `canary round --now`, judged and shown, deciding nothing",
    "abandoned": "abandoned: a round that ended before its decision; it counts for nothing",
    "running": "running: a round not finished yet",
}


def round_status(status: str, *, extra: bool) -> str:
    """A round's status in a table: ``finished``, ``abandoned``, ``extra, finished``..."""
    return f"extra, {status}" if extra else status


def history_notes(rounds: Sequence[tuple[str, bool]]) -> str:
    """What the marks of the rounds shown (status, extra) mean, one line each; "" when every
    round shown is a finished scheduled one."""
    shown = {status for status, _ in rounds} | ({"extra"} if any(x for _, x in rounds) else set())
    return "\n".join(note for mark, note in ROUND_NOTES.items() if mark in shown)


def ignore_service(
    ops: Ops,
    models: Sequence[str],
    *,
    builtin: Sequence[Exclusion] | None = None,
    policy_version: str | None = None,
) -> IgnoreListService:
    service = IgnoreListService(
        ops.store,
        ops.builtin() if builtin is None else tuple(builtin),
        list(models),
        ops.wiring().policy_version if policy_version is None else policy_version,
        lambda: ops.now,
        floor_of=lambda model: ops.settings.model(model).capacity_floor,
        controls_of=lambda model: ops.settings.model(model).controls,
        profiles=ops.settings.profile_rules,
    )
    if not service.refresh():
        from canary.config.settings import redact_url

        where = redact_url(ops.settings.database_url)
        fail(store_problem("cannot read", where, service.last_error or "unknown error"), code=1)
    return service
