"""Operator commands: status, quarantines, runtime exclusions, the ignore list, history, audit.

They act on the store directly (no daemon needed) and are audited like the API, with the actor
``cli:<user>``. Everything heavy is imported inside the commands, so a read command starts fast.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from canary.cli.common import fail, print_json, settings_from

if TYPE_CHECKING:
    from canary.core.model import Exclusion
    from canary.settings import Settings

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model id, author/slug.")]
OptModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Only this model.")]
ProviderOpt = Annotated[str, typer.Option("--provider", "-p", help="Provider tag (routing slug).")]
ReasonOpt = Annotated[str, typer.Option("--reason", "-r", help="Why; kept in the audit log.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

STATE_STYLES = {
    "healthy": "green",
    "suspect": "yellow",
    "degraded-latency": "dark_orange",
    "quarantined": "bold red",
    "excluded": "magenta",
    "unknown": "dim",
}
RESULT_MARKS = {
    "pass": "[green]✓[/]",
    "fail": "[red]✗[/]",
    "inconclusive": "[yellow]?[/]",
    "transport_error": "[dim]⚡[/]",
    "not_applicable": "[dim]–[/]",
}


# -- plumbing ---------------------------------------------------------------------------------


class _Ops:
    """The settings and the store of one command, and the checks every command shares."""

    def __init__(self, settings: Settings, store: Any) -> None:
        self.settings = settings
        self.store = store
        self.now = datetime.now(UTC)

    def models(self) -> list[str]:
        from canary.api.readmodel import known_models

        return known_models(self.settings.model_ids, self.store)

    def check_model(self, model: str) -> str:
        from canary.api.readmodel import require_model

        return require_model(self.settings.model_ids, self.store, model)

    def check_provider(self, model: str, tag: str, *, extra: Sequence[str] = ()) -> str:
        from canary.api.readmodel import require_provider

        return require_provider(self.store, model, tag, extra)

    def builtin(self) -> tuple[Exclusion, ...]:
        return tuple(self.wiring().probes.builtin_exclusions)

    def wiring(self) -> Any:
        if not hasattr(self, "_wiring"):
            from canary.probes import ProbeDefinitionError
            from canary.wiring import build_wiring

            try:
                self._wiring = build_wiring(self.settings, store=self.store, upgrade=False)
            except ProbeDefinitionError as exc:
                fail(f"probe definitions: {exc}")
        return self._wiring


@contextmanager
def _ops(ctx: typer.Context) -> Iterator[_Ops]:
    settings = settings_from(ctx)
    from canary.settings import redact_url
    from canary.store.repository import Store

    store = Store(settings.database_url)
    try:
        yield _Ops(settings, store)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except LookupError as exc:
        fail(str(exc).strip("'\""))
    except Exception as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        fail(
            f"cannot use the store at {redact_url(settings.database_url)}: "
            f"{type(exc).__name__}: {first} "
            "(has `canary db upgrade` been run?)",
            code=1,
        )
    finally:
        store.dispose()


def _names(values: Sequence[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def _actor() -> str:
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli:unknown"


def _when(text: str, option: str) -> datetime:
    from canary.api.readmodel import parse_when

    try:
        return parse_when(text)
    except ValueError:
        fail(f"{option} {text!r} is not an ISO-8601 time (e.g. 2026-05-01T12:00:00Z)")


def _console() -> Any:
    import sys

    from rich.console import Console

    # Piped output is read by people too (less, CI logs): do not squeeze it to 80 columns.
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)


def _table(title: str | None, *columns: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold", show_lines=False)
    for i, column in enumerate(columns):
        table.add_column(column, no_wrap=i < 2)
    return table


def _show(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> None:
    if not rows:
        _console().print(empty)
        return
    table = _table(title, *columns)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    _console().print(table)


def _s(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}"


# -- status -----------------------------------------------------------------------------------


def status(ctx: typer.Context, model: OptModelOpt = None, as_json: JsonOpt = False) -> None:
    """Each provider's state, last results and latency, and the published ignore list."""
    from canary.api import readmodel as rm

    with _ops(ctx) as ops:
        models = [ops.check_model(model)] if model else ops.models()
        if not models:
            fail("no model is watched and the store has seen none: add [[models]] to the settings")
        service = _service(ops, models)
        out = []
        for m in models:
            views = rm.provider_views(
                ops.store, m, builtin=ops.builtin(), now=ops.now,
                degraded_p95_s=ops.settings.latency_degraded_p95_s,
            )  # fmt: skip
            out.append({"model": m, "ignore": service.document(m)[0], "providers": views})
    if as_json:
        print_json(
            {
                "at": rm.iso(ops.now),
                "mode": ops.settings.mode,
                "models": [
                    {
                        "model": o["model"],
                        "ignore_list": o["ignore"],
                        "providers": [v.as_json() for v in o["providers"]],
                    }
                    for o in out
                ],
            }
        )
        return
    console = _console()
    for o in out:
        table = _table(
            f"{o['model']}  (mode {ops.settings.mode})",
            "Provider", "State", "Failing", "Last round", "TTFT s p50/p95/p99 (24h)", "Notes",
        )  # fmt: skip
        for v in o["providers"]:
            marks = " ".join(
                f"{c} {RESULT_MARKS.get(str(r['result']), '·')}" for c, r in v.results.items()
            )
            notes = []
            if v.quarantine_until:
                notes.append(
                    f"until {rm.iso(v.quarantine_until)} (step {v.quarantine_step or '?'})"
                )
            notes.extend(f"{e.layer.value}: {e.reason}" for e in v.exclusions)
            style = STATE_STYLES.get(v.state, "")
            table.add_row(
                v.provider,
                f"[{style}]{v.state}[/]" if style else v.state,
                str(v.failing_streak),
                marks or "[dim]none yet[/]",
                " / ".join(_s(v.ttft_24h.get(q)) for q in ("p50", "p95", "p99")),
                "; ".join(notes),
            )
        console.print(table)
        doc = o["ignore"]
        console.print(
            f"ignore list: {doc['ignore'] or '[] (nothing ignored)'}  "
            f"policy {doc['policy_version']}\n"
        )


def _service(ops: _Ops, models: Sequence[str]) -> Any:
    from canary.ignorelist import IgnoreListService

    service = IgnoreListService(
        ops.store, ops.builtin(), list(models), ops.wiring().policy_version, lambda: ops.now
    )
    if not service.refresh():
        raise RuntimeError(service.last_error or "the store could not be read")
    return service


# -- quarantine -------------------------------------------------------------------------------


def quarantine_list(
    ctx: typer.Context,
    model: OptModelOpt = None,
    include_ended: Annotated[
        bool, typer.Option("--all", help="Include ended quarantines.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Quarantines in force (or all of them with --all)."""
    from canary.api.readmodel import iso, quarantine_json

    with _ops(ctx) as ops:
        if model:
            ops.check_model(model)
        rows = ops.store.quarantines(model=model, active_only=not include_ended, now=ops.now)
    records = [quarantine_json(r) for r in rows]
    if as_json:
        keys = ("model", "provider", "since", "until", "step", "reason")
        print_json(
            [
                {
                    k: r[k]
                    for k in (*keys, *(("released_at", "release_why") if include_ended else ()))
                }
                for r in records
            ]
        )
        return
    _show(
        "quarantines" + (" (all)" if include_ended else " in force"),
        ("Model", "Provider", "Since", "Until", "Step", "Reason", "Released"),
        [
            (
                *(r[k] for k in ("model", "provider", "since", "until", "step", "reason")),
                f"{r['released_at']} ({r['release_why']})" if r["released_at"] else "",
            )
            for r in records
        ],  # fmt: skip
        f"no quarantine in force ({iso(ops.now)})",
    )


def quarantine_show(
    ctx: typer.Context, model: ModelOpt, provider: ProviderOpt, as_json: JsonOpt = False
) -> None:
    """One provider's quarantine state, evidence and quarantine history."""
    from canary.api.readmodel import jsonable, quarantine_json

    with _ops(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        state = ops.store.load_states(model).get(provider)
        active_ids = {
            q.id for q in ops.store.active_quarantines(model, ops.now) if q.tag == provider
        }
        history = [
            quarantine_json(q)
            for q in ops.store.quarantines(model=model, active_only=False, now=ops.now)
            if q.tag == provider
        ]
    active = next((q for q in history if q["id"] in active_ids), None)
    record = {
        "model": model,
        "provider": provider,
        "quarantined": active is not None,
        "active": active,
        "state": jsonable(state),
        "history": history,
    }
    if as_json:
        print_json(record)
        return
    console = _console()
    if active:
        console.print(
            f"[bold red]quarantined[/] {provider} of {model} since {active['since']} "
            f"until {active['until']} (step {active['step']}): {active['reason']}"
        )
        console.print(f"evidence rounds: {', '.join(map(str, active['evidence'])) or '–'}")
    else:
        console.print(f"[green]not quarantined[/]: {provider} of {model}")
    if state is not None:
        console.print(
            f"failing rounds in a row {state.failing_streak}, passing {state.passing_streak}, "
            f"ladder step {state.ladder_step}"
        )
    if history:
        _show(
            "quarantine history",
            ("Since", "Until", "Step", "Released", "Reason"),
            [
                (
                    q["since"],
                    q["until"],
                    q["step"],
                    f"{q['released_at'] or ''} {q['release_why'] or ''}".strip(),
                    q["reason"],
                )
                for q in history
            ],  # fmt: skip
            "",
        )


def quarantine_release(
    ctx: typer.Context, model: ModelOpt, provider: ProviderOpt, reason: ReasonOpt
) -> None:
    """Release a quarantine by hand (audited with the reason)."""
    from canary.store.rows import NoActiveQuarantine

    if not reason.strip():
        fail("--reason must not be empty")
    with _ops(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        try:
            ops.store.release_quarantine(model, provider, _actor(), reason.strip(), ops.now)
        except NoActiveQuarantine:
            active = sorted({q.tag for q in ops.store.active_quarantines(model, ops.now)})
            fail(
                f"{provider!r} of {model!r} has no active quarantine "
                f"(quarantined: {_names(active)})"
            )
    typer.echo(f"released {provider} of {model}; the daemon publishes the list at its next refresh")


# -- exclude ----------------------------------------------------------------------------------


def exclude_add(
    ctx: typer.Context,
    model: ModelOpt,
    provider: ProviderOpt,
    reason: ReasonOpt,
    until: Annotated[
        str | None, typer.Option("--until", help="End, ISO-8601 (default: until removed).")
    ] = None,
) -> None:
    """Add a runtime exclusion (audited with the reason)."""
    if not reason.strip():
        fail("--reason must not be empty")
    end = _when(until, "--until") if until else None
    with _ops(ctx) as ops:
        if end is not None and end <= ops.now:
            fail(f"--until {until} is not in the future")
        ops.check_model(model)
        ops.check_provider(
            model, provider, extra=[e.tag for e in ops.builtin() if e.model == model]
        )
        new_id = ops.store.add_exclusion(model, provider, reason.strip(), _actor(), end, ops.now)
    typer.echo(
        f"excluded {provider} of {model} (id {new_id})" + (f" until {until}" if until else "")
    )


def exclude_list(ctx: typer.Context, model: OptModelOpt = None, as_json: JsonOpt = False) -> None:
    """Active exclusions: the runtime layer and the reviewed built-in list."""
    from canary.api.readmodel import exclusion_json

    with _ops(ctx) as ops:
        if model:
            ops.check_model(model)
        runtime = ops.store.active_exclusions(model, ops.now)
        builtin = [
            e for e in ops.builtin() if (model is None or e.model == model) and e.active(ops.now)
        ]
    records = [exclusion_json(e) for e in (*runtime, *builtin)]
    if as_json:
        print_json(records)
        return
    keys = ("id", "layer", "model", "provider", "reason", "since", "until")
    _show(
        "exclusions",
        [k.title() for k in keys],
        [[r[k] for k in keys] for r in records],
        "no exclusion in force",
    )


def exclude_remove(
    ctx: typer.Context,
    exclusion_id: Annotated[int, typer.Argument(metavar="ID", help="Id shown by `exclude list`.")],
    reason: Annotated[
        str, typer.Option("--reason", "-r", help="Why; kept in the audit log.")
    ] = "removed by an operator",
) -> None:
    """Remove a runtime exclusion (audited)."""
    from canary.store.rows import UnknownExclusion

    with _ops(ctx) as ops:
        try:
            removed = ops.store.remove_exclusion(exclusion_id, _actor(), reason, ops.now)
        except UnknownExclusion:
            ids = [str(e.id) for e in ops.store.active_exclusions(None, ops.now)]
            fail(f"no active runtime exclusion with id {exclusion_id} (active: {_names(ids)})")
    typer.echo(f"removed exclusion {exclusion_id} ({removed.tag} of {removed.model})")


# -- ignore list, history, audit --------------------------------------------------------------


def ignore_list(ctx: typer.Context, model: ModelOpt, as_json: JsonOpt = False) -> None:
    """The published ignore list of a model: the same document as the API."""
    with _ops(ctx) as ops:
        ops.check_model(model)
        doc = _service(ops, [model]).document(model)[0]
    if as_json:
        print_json(doc)
        return
    keys = ("provider", "layer", "reason", "since", "until")
    _show(
        f"ignore list of {model}  (policy {doc['policy_version']})",
        [k.title() for k in keys],
        [[e[k] for k in keys] for e in doc["entries"]],
        f"nothing ignored for {model}",
    )
    _console().print(f'provider: {{"ignore": {doc["ignore"]}}}')


def history(
    ctx: typer.Context,
    model: ModelOpt,
    provider: ProviderOpt,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 30,
    as_json: JsonOpt = False,
) -> None:
    """A provider's round verdicts and contract results, newest first."""
    from canary.api.readmodel import history_json

    with _ops(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        records = [history_json(r) for r in ops.store.history(model, provider, limit)]
    if as_json:
        print_json(records)
        return
    _show(
        f"history of {provider} ({model})",
        ("Round", "At", "Verdict", "Results"),
        [
            (
                r["round_id"],
                r["at"],
                r["verdict"],
                "  ".join(
                    f"{c['contract']} {RESULT_MARKS.get(c['result'], '·')}" for c in r["results"]
                ),
            )
            for r in records
        ],  # fmt: skip
        f"no round has judged {provider} yet",
    )


def audit(
    ctx: typer.Context,
    model: OptModelOpt = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO-8601 time.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Audit records: every automatic decision and operator action, newest first."""
    from canary.api.readmodel import audit_json

    start = _when(since, "--since") if since else None
    with _ops(ctx) as ops:
        if model:
            ops.check_model(model)
        rows = ops.store.audit(model=model, since=start, limit=limit)
    records = [audit_json(r) for r in rows]
    if as_json:
        print_json(records)
        return
    _show(
        "audit",
        ("At", "Event", "Actor", "Model", "Provider", "Detail"),
        [
            (r["at"], r["event"], r["actor"], r["model"], r["provider"], _gist(r["detail"]))
            for r in records
        ],
        "no audit record",
    )


def _gist(detail: dict[str, Any]) -> str:
    text = detail.get("reason") or detail.get("why")
    return str(text or ", ".join(f"{k}={v}" for k, v in list(detail.items())[:4]))[:80]


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("ignore-list")(ignore_list)
    app.command("history")(history)
    app.command("audit")(audit)
    quarantine = typer.Typer(help="Inspect and release quarantines.", no_args_is_help=True)
    quarantine.command("list")(quarantine_list)
    quarantine.command("show")(quarantine_show)
    quarantine.command("release")(quarantine_release)
    app.add_typer(quarantine, name="quarantine")
    exclude = typer.Typer(help="Runtime exclusions: add, list, remove.", no_args_is_help=True)
    exclude.command("add")(exclude_add)
    exclude.command("list")(exclude_list)
    exclude.command("remove")(exclude_remove)
    app.add_typer(exclude, name="exclude")
