"""``canary report add`` (an operator reports what a user saw, as an app would) and
``canary report list`` (with the notes: operators see them)."""

from __future__ import annotations

from typing import Annotated

import typer

from canary.cli.common import fail, print_json
from canary.cli.ops_base import JsonOpt, ModelOpt, OptModelOpt, actor, ops_context, show, when


def report_add(
    ctx: typer.Context,
    model: ModelOpt,
    symptom: Annotated[
        str, typer.Option("--symptom", "-s", metavar="SYMPTOM", help="One of docs/api.md's set.")
    ],
    provider: Annotated[
        str | None,
        typer.Option("--provider", "-p", metavar="PROVIDER", help="The provider the answer named."),
    ] = None,
    generation_id: Annotated[
        str | None, typer.Option("--generation-id", "-g", metavar="ID")
    ] = None,
    language: Annotated[str | None, typer.Option("--language", metavar="LANG")] = None,
    note: Annotated[str | None, typer.Option("--note", metavar="TEXT")] = None,
    at: Annotated[str | None, typer.Option("--at", metavar="TIME", help="ISO-8601.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Report a bad answer: it starts a focused check (the daemon runs it); never evidence."""
    from canary.service.reports import (
        Said,
        TooManyReports,
        UnknownSymptom,
        report_json,
        take_report,
    )

    seen = when(at, "--at") if at else None
    with ops_context(ctx, action="report") as ops:
        ops.check_model(model)
        said = Said(model, symptom, provider, generation_id, language, note, seen)
        try:
            taken = take_report(ops.store, ops.settings, said, actor(), ops.now)
        except (UnknownSymptom, TooManyReports) as exc:
            fail(str(exc))
    body = report_json(taken.report, notes=True)
    if as_json:
        print_json(body)
        return
    made = "stored" if taken.created else "already reported"
    typer.echo(f"report {body['id']} {made}: {body['outcome']} {body['endpoints']}")


def report_list(
    ctx: typer.Context,
    model: OptModelOpt = None,
    since: Annotated[str | None, typer.Option("--since", metavar="TIME")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", metavar="OUTCOME")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000, metavar="N")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Reports, newest first, with their outcome and notes; --json prints GET /v1/reports's
    body as the admin API answers it."""
    from canary.service.reports import report_json

    start = when(since, "--since") if since else None
    with ops_context(ctx) as ops:
        if model:
            ops.check_model(model)
        rows = ops.store.reports(
            model=model, since=start, outcomes=[outcome] if outcome else [], limit=limit
        )
    bodies = [report_json(r, notes=True) for r in rows]
    if as_json:
        print_json({"reports": bodies})
        return
    show(
        "reports",
        ("Id", "At", "Model", "Endpoints", "Symptom", "Outcome", "Checks", "Note"),
        [
            (
                b["id"],
                b["at"],
                b["model"],
                ", ".join(r.tags) or "-",
                b["symptom"],
                b["outcome"],
                ", ".join(map(str, r.checks)),
                (r.note or "")[:40],
            )
            for b, r in zip(bodies, rows, strict=True)
        ],  # fmt: skip
        "no report",
    )


def register(app: typer.Typer) -> None:
    report = typer.Typer(help="Apps' reports: add one, list them.", no_args_is_help=True)
    report.command("add")(report_add)
    report.command("list")(report_list)
    app.add_typer(report, name="report")
