"""Operator commands: status, quarantines, runtime exclusions, maintenance windows, the ignore
list, history, audit.

They act on the store directly (no daemon needed) and are audited like the API, with the actor
``cli:<user>``. Everything heavy is imported inside the commands, so a read command starts fast.
``canary status`` lives in :mod:`canary.cli.ops_status`, the shared plumbing in
:mod:`canary.cli.ops_base`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

import typer
from pydantic_core import to_jsonable_python

from canary.cli.common import fail, print_json, to_second
from canary.cli.ops_base import (
    RESULT_COLOURS,
    JsonOpt,
    ModelOpt,
    Ops,
    OptModelOpt,
    ProviderOpt,
    ReasonOpt,
    actor,
    console,
    history_notes,
    ignore_service,
    ops_context,
    round_status,
    show,
    when,
)
from canary.cli.ops_status import status
from canary.core.document import IgnoreDocument
from canary.core.events import explanation
from canary.core.identity import InvalidTag
from canary.core.model import Layer
from canary.core.profiles import UnknownProfile
from canary.store.rows import FloorRefused, NoActiveQuarantine, UnknownExclusion, WindowInForce
from canary.views.bodies import (
    exclusions_body,
    history_body,
    ignore_lists_answer,
    maintenance_body,
    quarantines_body,
)
from canary.views.records import (
    RESULT_SYMBOLS,
    ExclusionRecord,
    audit_json,
    iso,
    names,
    quarantine_json,
)

# -- quarantine -------------------------------------------------------------------------------


def quarantine_list(
    ctx: typer.Context,
    model: OptModelOpt = None,
    include_ended: Annotated[
        bool, typer.Option("--all", help="Include ended quarantines.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Quarantines in force (or all of them with --all); --json prints GET /v1/quarantines's
    body (?all=true with --all)."""
    with ops_context(ctx) as ops:
        if model:
            ops.check_model(model)
        body = quarantines_body(ops.store, model, ops.now, include_ended=include_ended)
    if as_json:
        print_json(body)
        return
    records = body["quarantines"]
    show(
        "quarantines" + (" (all)" if include_ended else " in force"),
        ("Model", "Provider", "Since", "Until", "Step", "Reason", "Released"),
        [
            (
                *(r[k] for k in ("model", "provider", "since", "until", "step", "reason")),
                f"{r['released_at']} ({r['release_why']})" if r["released_at"] else "",
            )
            for r in records
        ],  # fmt: skip
        f"no quarantine in force ({to_second(ops.now)})",
    )


def quarantine_show(
    ctx: typer.Context, model: ModelOpt, provider: ProviderOpt, as_json: JsonOpt = False
) -> None:
    """One provider's quarantine state, evidence and quarantine history."""
    with ops_context(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        state = ops.store.load_states(model).get(provider)
        active_ids = {
            q.id for q in ops.store.active_quarantines(model, ops.now) if q.tag == provider
        }
        rows = [
            q
            for q in ops.store.quarantines(model=model, active_only=False, now=ops.now)
            if q.tag == provider
        ]
    history = [quarantine_json(q) for q in rows]
    active = next((q for q in history if q["id"] in active_ids), None)
    evidence = next((q.evidence for q in rows if q.id in active_ids), ())
    record = {
        "model": model,
        "provider": provider,
        "quarantined": active is not None,
        "active": active,
        "state": None
        if state is None
        else {**to_jsonable_python(state), "failing_streak": state.failing_streak},
        "history": history,
    }
    if as_json:
        print_json(record)
        return
    out = console()
    if active:
        out.print(
            f"[bold red]quarantined[/] {provider} of {model} since {to_second(active['since'])} "
            f"until {to_second(active['until'])} (step {active['step']}): {active['reason']}"
        )
        out.print(f"causes: {', '.join(active['causes']) or '–'}")
        if active["withheld"]:
            out.print("[yellow]withheld[/] from the published list to hold the capacity floor")
        looks = [
            f"{x.kind} {x.id}" + (f" started {to_second(x.at)}" if x.at else "") for x in evidence
        ]
        out.print(f"evidence: {', '.join(looks) or '–'}")
    else:
        out.print(f"[green]not quarantined[/]: {provider} of {model}")
    if state is not None:
        counts = ", ".join(f"{s.contract.value} {s.count}" for s in state.streaks) or "none"
        out.print(
            f"failing rounds in a row per contract: {counts}; recovery rounds "
            f"{state.recovery_streak}; ladder step {state.ladder_step}"
        )
    if history:
        show(
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
    if not reason.strip():
        fail("--reason must not be empty")
    with ops_context(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        try:
            ops.store.release_quarantine(model, provider, actor(), reason.strip(), ops.now)
        except NoActiveQuarantine:
            active = sorted({q.tag for q in ops.store.active_quarantines(model, ops.now)})
            fail(
                f"{provider!r} of {model!r} has no active quarantine (quarantined: {names(active)})"
            )
    typer.echo(f"released {provider} of {model}; the daemon publishes the list at its next refresh")


# -- exclude ----------------------------------------------------------------------------------


def exclude_add(
    ctx: typer.Context,
    model: ModelOpt,
    provider: ProviderOpt,
    reason: ReasonOpt,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="TIME", help="End, ISO-8601 (default: until removed)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Exclude it even when fewer usable endpoints than the capacity floor would "
            "remain (audited as a floor breach).",
        ),
    ] = False,
) -> None:
    """Add a runtime exclusion (audited with the reason). A provider slug ("deepinfra")
    excludes every endpoint of that provider; a tag ("deepinfra/fp8") one endpoint. Refused
    (exit 4) when it would leave fewer usable endpoints than the capacity floor, unless --force."""
    end = when(until, "--until") if until else None
    with ops_context(ctx) as ops:
        builtin = [e for e in ops.builtin() if e.model == model]
        why = _checked(ops, model, provider, reason, end, extra=[e.tag for e in builtin])
        try:
            added = ops.store.add_exclusion(
                model,
                provider,
                why,
                actor(),
                end,
                ops.now,
                builtin=builtin,
                floor=ops.settings.model(model).capacity_floor,
                controls=ops.settings.model(model).controls,
                force=force,
                policy_version=ops.wiring().policy_version,
            )
        except FloorRefused as exc:
            fail(f"refused: {exc} (--force to exclude it anyway)", code=4)
    typer.echo(
        f"excluded {provider} of {model} (id {added.id})"
        + (f" until {until}" if until else "")
        + f"; {added.check.message}"
    )


def _checked(
    ops: Ops,
    model: str,
    provider: str,
    reason: str,
    end: datetime | None,
    *,
    extra: Sequence[str] = (),
) -> str:
    """The reason of an operator's entry, once it is not empty, the end is in the future, the
    model is known and the provider is a known tag or base slug (exit 2 when not a slug)."""
    if not reason.strip():
        fail("--reason must not be empty")
    if end is not None and end <= ops.now:
        fail(f"--until {to_second(end)} is not in the future")
    ops.check_model(model)
    try:
        ops.check_provider(model, provider, extra=extra)
    except InvalidTag as exc:
        fail(str(exc), code=2)
    return reason.strip()


def exclude_list(ctx: typer.Context, model: OptModelOpt = None, as_json: JsonOpt = False) -> None:
    """Active exclusions: the runtime layer and the reviewed built-in list; --json prints
    GET /v1/exclusions's body."""
    with ops_context(ctx) as ops:
        if model:
            ops.check_model(model)
        body = exclusions_body(ops.store, ops.builtin(), model, ops.now)
    if as_json:
        print_json(body)
        return
    _entries("exclusions", body["exclusions"], "no exclusion in force")


def _entries(title: str, records: Sequence[ExclusionRecord], empty: str) -> None:
    show(
        title,
        ("Id", "Layer", "Model", "Provider", "Reason", "Since", "Until"),
        [
            [r["id"], r["layer"], r["model"], r["provider"], r["reason"], r["since"], r["until"]]
            for r in records
        ],
        empty,
    )


IdArg = Annotated[int, typer.Argument(metavar="ID", help="Id shown by its `list` command.")]


def exclude_remove(
    ctx: typer.Context, exclusion_id: IdArg, reason: ReasonOpt = "removed by an operator"
) -> None:
    """Remove a runtime exclusion (audited)."""
    _remove(ctx, exclusion_id, reason, maintenance=False)


def _remove(ctx: typer.Context, entry_id: int, reason: str, *, maintenance: bool) -> None:
    layer = Layer.maintenance if maintenance else Layer.runtime
    with ops_context(ctx) as ops:
        try:
            removed = ops.store.remove_exclusion(entry_id, actor(), reason, ops.now, layer=layer)
        except UnknownExclusion as exc:
            ids = [str(e.id) for e in ops.store.active_exclusions(None, ops.now, layer)]
            fail(f"{exc} (active: {names(ids)})")
    what = "maintenance window" if maintenance else "exclusion"
    typer.echo(f"removed {what} {entry_id} ({removed.tag} of {removed.model})")


# -- maintenance ------------------------------------------------------------------------------


def maintenance_add(
    ctx: typer.Context,
    model: ModelOpt,
    provider: ProviderOpt,
    reason: ReasonOpt,
    until: Annotated[
        str, typer.Option("--until", metavar="TIME", help="When the window ends, ISO-8601.")
    ],
) -> None:
    """Put a provider under planned maintenance until TIME (audited with the reason): it is
    still probed and recorded, but its results change no count, start or release no
    quarantine and raise no notification; it stays usable capacity. A provider slug names
    every endpoint of that provider, a tag one endpoint. Refused (exit 4) while a window for
    the same provider is in force."""
    end = when(until, "--until")
    with ops_context(ctx) as ops:
        why = _checked(ops, model, provider, reason, end)
        try:
            new_id = ops.store.add_maintenance(
                model, provider, why, actor(), end, ops.now,
                policy_version=ops.quick_policy_version(),
            )  # fmt: skip
        except WindowInForce as exc:
            fail(f"refused: {exc}", code=4)
    typer.echo(f"{provider} of {model} is under maintenance until {to_second(end)} (id {new_id})")


def maintenance_list(
    ctx: typer.Context, model: OptModelOpt = None, as_json: JsonOpt = False
) -> None:
    """Maintenance windows in force; --json prints GET /v1/maintenance's body."""
    with ops_context(ctx) as ops:
        if model:
            ops.check_model(model)
        body = maintenance_body(ops.store, model, ops.now)
    if as_json:
        print_json(body)
        return
    _entries("maintenance windows", body["maintenance"], "no maintenance window in force")


def maintenance_remove(
    ctx: typer.Context, window_id: IdArg, reason: ReasonOpt = "ended by an operator"
) -> None:
    """End a maintenance window now (audited): the provider's results count again."""
    _remove(ctx, window_id, reason, maintenance=True)


# -- ignore list, history, audit --------------------------------------------------------------


def ignore_list(
    ctx: typer.Context,
    model: Annotated[
        list[str],
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help="Model id, author/slug. Repeat it for several models (one list each).",
        ),
    ],
    needs: Annotated[
        str | None,
        typer.Option(
            "--needs",
            metavar="CAPABILITIES",
            help="Comma-separated capabilities the app uses (structured_outputs, tools): the "
            "list cut for it, as GET /v1/ignore-list?needs= gives it.",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            metavar="NAME",
            help="A task profile of the settings ([[profiles]]): its list, as GET "
            "/v1/ignore-list?profile= gives it (--needs adds to its needs).",
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="TIME",
            help="What was published then (one model; with --needs, --profile: that variant), "
            "and why.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The published ignore list of a model (or of several): --json prints GET
    /v1/ignore-list's body for the same models; --at T, the list published at T."""
    from canary.core.needs import UnknownNeed, parse_needs

    try:
        wanted = parse_needs(needs)
    except UnknownNeed as exc:
        fail(str(exc), code=2)
    models = list(dict.fromkeys(model))
    then = when(at, "--at") if at else None
    if then is not None and len(models) != 1:
        fail("--at reads the history of one model", code=2)
    with ops_context(ctx) as ops:
        for name in models:
            ops.check_model(name)
        if then is not None:
            from canary.service.ignore_list import variant_key

            row = ops.store.document_at(models[0], variant_key(wanted, profile), then)
            if row is None:
                cut = "" if profile is None else f" (profile {profile})"
                fail(f"nothing was recorded as published for {models[0]}{cut} at {at}")
            if as_json:  # GET /v1/ignore-list?at=T's body
                from canary.views.records import iso

                print_json({"model": row.model, "at": iso(then), "published_at": iso(row.at),
                            "etag": row.etag, "document": row.body})  # fmt: skip
            else:
                console().print(f"published at {to_second(row.at)} ({row.etag})", markup=False)
                _show_list(models[0], row.body)  # type: ignore[arg-type]
            return
        try:
            answer = ignore_lists_answer(ignore_service(ops, models), models, wanted, profile)
        except UnknownProfile as exc:
            fail(str(exc), code=2)
    if as_json:
        print_json(json.loads(answer.body))
        return
    for part in answer.parts:
        _show_list(part.model, part.document)


def _show_list(model: str, doc: IgnoreDocument) -> None:
    needs_line = ", ".join(doc.get("needs") or ())  # the capabilities the list was cut for
    profile = doc.get("profile")
    cut = f" for profile {profile['name']}" if profile else ""
    cut += f" for needs {needs_line}" if needs_line else ""
    show(
        f"ignore list of {model}{cut}  (policy {doc['policy_version']})",
        ["Provider", "Layer", "Reason", "Since", "Until"],
        [[e["provider"], e["layer"], e["reason"], e["since"], e["until"]] for e in doc["entries"]],
        f"nothing ignored for {model}",
    )
    if needs_line:
        console().print(f"needs: {needs_line}", markup=False)
    if profile and doc["withheld"]:
        console().print(f"withheld for the floor: {', '.join(doc['withheld'])}", markup=False)
    console().print(f"provider: {json.dumps({'ignore': doc['ignore']})}", markup=False)


def history(
    ctx: typer.Context,
    model: ModelOpt,
    provider: ProviderOpt,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, metavar="N")] = 30,
    as_json: JsonOpt = False,
) -> None:
    """A provider's round verdicts and contract results, newest first; an extra round
    (`canary round --now`) and a round that did not finish are marked as such. --json prints
    GET /v1/history's body."""
    with ops_context(ctx) as ops:
        ops.check_model(model)
        ops.check_provider(model, provider)
        body = history_body(ops.store, model, provider, limit)
    if as_json:
        print_json(body)
        return
    records = body["history"]
    show(
        f"history of {provider} ({model})",
        ("Round", "At", "Status", "Verdict", "Results"),
        [
            (
                r["round_id"],
                r["at"],
                round_status(r["round_status"], extra=r["extra"]),
                r["verdict"],
                "  ".join(
                    f"{c['contract']} [{RESULT_COLOURS.get(c['result'], 'dim')}]"
                    f"{RESULT_SYMBOLS.get(c['result'], '·')}[/]"
                    for c in r["results"]
                ),
            )
            for r in records
        ],  # fmt: skip
        f"no round has judged {provider} yet",
    )
    notes = history_notes([(r["round_status"], r["extra"]) for r in records])
    if notes:
        console().print(notes, markup=False)


def audit(
    ctx: typer.Context,
    model: OptModelOpt = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="TIME", help="ISO-8601 time.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000, metavar="N")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Audit records: every automatic decision and operator action, newest first; --json prints
    GET /v1/audit's body."""
    start = when(since, "--since") if since else None
    with ops_context(ctx) as ops:
        if model:
            ops.check_model(model)
        rows = ops.store.audit(model=model, since=start, limit=limit)
    if as_json:
        print_json({"records": [audit_json(r) for r in rows]})
        return
    show(
        "audit",
        ("At", "Event", "Actor", "Model", "Provider", "Detail"),
        [(iso(r.at), r.event, r.actor, r.model, r.tag, explanation(r.decided)[:80]) for r in rows],
        "no audit record",
    )


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
    maintenance = typer.Typer(
        help="Planned maintenance windows: add, list, remove.", no_args_is_help=True
    )
    maintenance.command("add")(maintenance_add)
    maintenance.command("list")(maintenance_list)
    maintenance.command("remove")(maintenance_remove)
    app.add_typer(maintenance, name="maintenance")
