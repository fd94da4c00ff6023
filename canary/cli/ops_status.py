"""``canary status``: each provider's routing state, last results and latency, the published
ignore list, and what probing costs (latest round, last 24 h, today, the daily budget).

It reads the built-in list from its file alone and takes the policy version from the latest
round, so it never loads every probe definition on its way (see :class:`Ops`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import typer
from rich.table import Table
from rich.text import Text

from canary.cli.common import fail, print_json, to_second
from canary.cli.ops_base import (
    RESULT_COLOURS,
    STATE_STYLES,
    JsonOpt,
    OptModelOpt,
    console,
    ignore_service,
    ops_context,
    table_of,
)
from canary.cli.painted import Cell, Painter, Piece, cell, columns
from canary.core.document import IgnoreDocument
from canary.store._equality import EqualityRecord
from canary.views.bodies import providers_body
from canary.views.cost import CostDay, ModelCost, cost_view, model_cost
from canary.views.equality import equality_line
from canary.views.latency import Latency
from canary.views.providers import ProviderView, named_endpoints, provider_views_of
from canary.views.records import RESULT_SYMBOLS, iso, seconds, usd

LATENCY_STYLES = {"healthy": "green", "degraded": "dark_orange", "unknown": "dim"}


def status(ctx: typer.Context, model: OptModelOpt = None, as_json: JsonOpt = False) -> None:
    """Each provider's state, last results, latency and cost, and the published ignore list."""
    with ops_context(ctx, action="read") as ops:
        models = [ops.check_model(model)] if model else ops.models()
        if not models:
            fail("no model is watched and the store has seen none: add [[models]] to the settings")
        builtin = ops.builtin()
        service = ignore_service(
            ops, models, builtin=builtin, policy_version=ops.quick_policy_version()
        )
        spend = cost_view(ops.store, models, ops.now, ops.settings.daily_budget_usd)
        views_of = provider_views_of(
            ops.store, models, builtin=builtin, now=ops.now,
            degraded_p95_s=ops.settings.latency_degraded_p95_s,
            controls=ops.settings.model_controls,
        )  # fmt: skip
        checked: dict[str, list[EqualityRecord]] = {m: [] for m in models}
        for record in ops.store.latest_equality(models):
            checked[record.model].append(record)
        out = [
            _ModelStatus(m, service.document(m)[0], views_of[m], model_cost(spend, m), checked[m])
            for m in models
        ]
    if as_json:  # each model: GET /v1/providers's body, and its GET /v1/ignore-list document
        print_json(
            {
                "at": iso(ops.now),
                "mode": ops.settings.mode,
                "cost": spend["day"],
                "models": [
                    {
                        **providers_body(o.model, ops.now, o.providers, spend, o.equality),
                        "ignore_list": o.ignore,
                    }
                    for o in out
                ],
            }
        )
        return
    shown = console()
    painter = Painter(shown)
    mode = ops.settings.mode
    for o in out:
        doc = o.ignore
        ignored = json.dumps(doc["ignore"]) if doc["ignore"] else "[] (nothing ignored)"
        lines = providers_table(painter, f"{o.model}  (mode {mode})", o.providers)
        lines.append(f"ignore list: {ignored}  policy {doc['policy_version']}")
        lines.append(painter.line(floor_line(doc)))
        shown.file.write("\n".join(lines) + "\n")
        if doc["entries"]:
            shown.print(entries_table(doc, o.providers))
        shown.file.write(painter.line(cost_line(o.cost)) + f"\n{equality_line(o.equality)}\n\n")
    shown.file.write(day_line(spend["day"]) + "\n")


@dataclass(frozen=True)
class _ModelStatus:
    model: str
    ignore: IgnoreDocument
    providers: list[ProviderView]
    cost: ModelCost
    equality: list[EqualityRecord]


def floor_line(doc: IgnoreDocument) -> Cell:
    """The capacity floor on the published list: red when breached."""
    usable, floor = doc["usable_endpoints"], doc["capacity_floor"]
    if usable is None:
        return cell(f"capacity floor {floor}: not listed yet")
    withheld = doc["withheld"]
    held = f"; withheld to hold it: {', '.join(withheld)}" if withheld else ""
    if doc["floor_breached"]:
        return (
            ("FLOOR BREACHED", "bold red"),
            (f": {usable} usable endpoint(s), floor {floor}{held}", ""),
        )
    return cell(f"capacity floor {floor}: {usable} usable endpoint(s){held}")


def entries_table(doc: IgnoreDocument, views: list[ProviderView]) -> Table:
    """The entries of the published list as entries: an entry is not an endpoint (a provider
    slug names endpoints, each shown in the table above as ``excluded``)."""
    table = table_of("entries of the published list", "Entry", "Layer", "Names", "Reason", "Until")
    for e in doc["entries"]:
        names = named_endpoints(e["provider"], e["layer"], views)
        table.add_row(
            Text(e["provider"]),
            Text(e["layer"]),
            Text(", ".join(names)) if names else Text("no endpoint known", "dim"),
            Text(e["reason"]),
            Text(to_second(e["until"]) if e["until"] else ""),
        )
    return table


COLUMNS = (
    "Provider", "State", "Failing", "Last round", "TTFT s p50/p95/p99 (24h)", "Latency s", "Notes",
)  # fmt: skip


def providers_table(painter: Painter, title: str, views: list[ProviderView]) -> list[str]:
    rows = []
    for v in views:
        marks: list[Piece] = []
        for c, r in v.results.items():
            marks.append((f" {c} " if marks else f"{c} ", ""))
            marks.append((RESULT_SYMBOLS.get(r.result, "·"), RESULT_COLOURS.get(r.result, "dim")))
        day = v.latency.day
        notes = []
        if v.quarantine_until:
            notes.append(f"until {to_second(v.quarantine_until)} (step {v.quarantine_step or '?'})")
        notes.extend(v.exclusion_notes)
        ttft = f"{seconds(day.get('p50'))} / {seconds(day.get('p95'))} / {seconds(day.get('p99'))}"
        rows.append((
            cell(v.provider),
            cell(v.state, STATE_STYLES.get(v.state, "")),
            cell(str(v.failing_streak)),
            marks or cell("none yet", "dim"),
            cell(ttft),
            latency_cell(v.latency),
            cell("; ".join(notes)),
        ))  # fmt: skip
    return columns(painter, title, COLUMNS, rows)


def latency_cell(latency: Latency) -> Cell:
    """``degraded (7d p95 6.10, peers p95 1.00, OR p50 0.64)``: the state and its context, in
    seconds like every time in the tables (OpenRouter's figures come in milliseconds)."""
    beside = [f"7d p95 {seconds(latency.week.get('p95'))}"]
    if latency.peers_p95_24h_s is not None:
        beside.append(f"peers p95 {latency.peers_p95_24h_s:.2f}")
    if latency.openrouter_ms and "p50" in latency.openrouter_ms:
        beside.append(f"OR p50 {seconds(latency.openrouter_ms['p50'] / 1000)}")
    return ((latency.state, LATENCY_STYLES.get(latency.state, "")), (f" ({', '.join(beside)})", ""))


def cost_line(cost: ModelCost) -> Cell:
    last = cost["last_round"]
    parts = [
        f"last round {usd(last['cost_usd']) if last else '– (no round yet)'}",
        f"last 24 h {usd(cost['last_24h_usd'])}",
        f"today {usd(cost['today_usd'])}",
    ]
    line = [("probe cost: " + ", ".join(parts), "")]
    skipped = last["skipped"] if last else []
    if skipped:
        names = ", ".join(str(s["provider"]) for s in skipped)
        why = skipped[0]["reason"] or "?"
        line += [("\n", ""), ("skipped last round", "dark_orange"), (f": {names} ({why})", "")]
    return line


def day_line(day: CostDay) -> str:
    text = f"probes today (UTC, all models): {usd(day['today_usd'])}"
    if day["daily_budget_usd"] is not None:
        text += (
            f" of the daily budget {usd(day['daily_budget_usd'])}, "
            f"{usd(day['budget_left_usd'])} left"
        )
    else:
        text += " (no daily budget set)"
    return text
