"""``canary drift --model M [--since T] [--json]``: the endpoint changes the rounds recorded.

Every round compares the model's endpoints list with the previous round's and stores one drift
row per change (price, quantization, context length, supported parameters, status, an endpoint
appearing or vanishing, the endpoint count under the capacity floor, the model its answers
report). ``--served`` lists the model each endpoint served last and flags unexpected ids. This command lists them
from the store, newest first, like ``canary audit`` and ``canary history``: the latest change is
what an operator usually came for, and ``--since`` bounds how far back to go.

The JSON form is an array of ``{at, round_id, model, provider, field, old, new, alert, reason}``
with the values exactly as stored (prices in USD per token, as OpenRouter publishes them); the
table shows prices per million tokens and parameter lists as what was added or dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, TypedDict

import typer
from pydantic import JsonValue
from rich.markup import escape
from rich.table import Table

from canary.cli.common import print_json, to_second
from canary.cli.ops_base import ModelOpt, ops_context, when
from canary.cli.ops_base import console as _console
from canary.core.drift import PER_MILLION
from canary.store.log_rows import DriftRow
from canary.store.repository import Store
from canary.views.records import iso


def drift(
    ctx: typer.Context,
    model: ModelOpt,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="TIME", help="Only changes at or after this ISO-8601 time."
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", min=1, max=100_000, metavar="N", help="At most this many, newest first."
        ),
    ] = 500,
    alerts_only: Annotated[
        bool, typer.Option("--alerts", help="Only the changes that can break routing.")
    ] = False,
    served: Annotated[
        bool,
        typer.Option(
            "--served",
            help="The model each endpoint's answers reported last, and whether it is an "
            "expected id (the requested one, the listing's model_id, or the requested one with "
            "a date suffix).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """Endpoint drift of a model (price, quantization, parameters, presence, served model),
    newest first."""
    start = when(since, "--since") if since is not None else None
    with ops_context(ctx, action="read") as ops:
        checked = ops.check_model(model)
        rows = ops.store.drift(checked, since=start, limit=limit)
        now_served = served_now(ops.store, checked)
    if served:
        if as_json:
            print_json(now_served)
        else:
            _print_served(model, now_served)
        return
    records = [drift_json(r) for r in rows if r.alert or not alerts_only]
    if as_json:
        print_json(records)
        return
    _print_table(model, records, since=start is not None, truncated=len(rows) >= limit)
    if any(not r["expected"] for r in now_served):
        _print_served(model, now_served)


class ServedRecord(TypedDict):
    provider: str
    served_model: str
    expected: bool


class DriftRecord(TypedDict):
    at: str | None
    round_id: int | None
    model: str
    provider: str | None
    field: str
    old: JsonValue
    new: JsonValue
    alert: bool
    reason: str | None


def served_now(store: Store, model: str) -> list[ServedRecord]:
    """Each endpoint's latest served model: ``[{provider, served_model, expected}]``."""
    from canary.core.served import is_expected

    latest = store.served_models_before(model, None)
    snapshot = store.latest_snapshot(model) or {}
    served: list[ServedRecord] = []
    for tag, value in sorted(latest.items()):
        permaslug = snapshot.get(tag, {}).get("model_id")
        expected = is_expected(value, model, permaslug if isinstance(permaslug, str) else None)
        served.append(ServedRecord(provider=tag, served_model=value, expected=expected))
    return served


def _print_served(model: str, rows: Sequence[ServedRecord]) -> None:
    console = _console()
    if not rows:
        console.print(f"no served model recorded for {model} yet")
        return
    for r in rows:
        mark = "" if r["expected"] else "  [bold red](unexpected id)[/]"
        console.print(f"{escape(r['provider'])}: serves {escape(r['served_model'])}{mark}")


def drift_json(row: DriftRow) -> DriftRecord:
    """One stored drift row (``canary.store.log_rows.DriftRow``) in the CLI's JSON shape."""
    return {
        "at": iso(row.at),
        "round_id": row.round_id,
        "model": row.model,
        "provider": row.tag,
        "field": row.field,
        "old": row.old,
        "new": row.new,
        "alert": bool(row.alert),
        "reason": row.reason,
    }


def describe(field: str, old: JsonValue, new: JsonValue) -> str:
    """A change as a person reads it: prices per million tokens, parameters added or dropped."""
    if field == "presence":
        return "appeared" if new is not None else "vanished"
    if field == "capacity":
        return f"{_plain(old)} → {_plain(new)} endpoints"
    if field.startswith("pricing."):
        return f"{_per_million(old)} → {_per_million(new)} USD/M tokens"
    if field == "served_model" and isinstance(old, list):  # every endpoint at once
        return f"{', '.join(map(str, old))} → {_plain(new)}"
    if isinstance(old, list) or isinstance(new, list):
        was, now = (set(map(str, v)) if isinstance(v, list) else set() for v in (old, new))
        parts = [f"-{p}" for p in sorted(was - now)] + [f"+{p}" for p in sorted(now - was)]
        return " ".join(parts) or "reordered"
    return f"{_plain(old)} → {_plain(new)}"


def _print_table(
    model: str, records: Sequence[DriftRecord], *, since: bool, truncated: bool
) -> None:
    console = _console()
    if not records:
        console.print(f"no endpoint drift recorded for {model}{' in that window' if since else ''}")
        return
    table = Table(title=f"endpoint drift of {model}, newest first", title_justify="left")
    for column in ("At", "Round", "Provider", "Field", "Change", "Alert"):
        table.add_column(column, no_wrap=column in ("At", "Provider", "Field"))
    for r in records:
        alert = f"[bold red]{escape(r['reason'] or 'alert')}[/]" if r["alert"] else ""
        table.add_row(
            to_second(r["at"]),
            "" if r["round_id"] is None else str(r["round_id"]),
            escape(r["provider"] or "(model)"),
            escape(r["field"]),
            escape(describe(r["field"], r["old"], r["new"])),
            alert,
        )
    console.print(table)
    alerts = sum(1 for r in records if r["alert"])
    more = " (limit reached: older changes not shown, raise --limit)" if truncated else ""
    console.print(f"{len(records)} change(s), {alerts} alert(s){more}")


def _per_million(value: JsonValue) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _plain(value)
    return f"{round(value * PER_MILLION, 9):g}"


def _plain(value: JsonValue) -> str:
    return "–" if value is None else str(value)


def register(app: typer.Typer) -> None:
    app.command("drift")(drift)
