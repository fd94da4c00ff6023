"""The status page: server-rendered HTML with inline CSS and inline SVG (no external assets).

Per model: each provider's state in colour, its last result per contract, a sparkline of its
recent time to first token, the quarantine timeline of the last two weeks, the published ignore
list and its staleness, and the latest decisions. It refreshes itself every 30 seconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from html import escape
from pathlib import Path

from canary.api.page_data import TIMELINE_DAYS, ModelSection, PageContext
from canary.core.document import IgnoreDocument
from canary.core.events import explanation
from canary.store.rows import ResultMark
from canary.views.cost import CostDay
from canary.views.providers import STATES, ProviderView
from canary.views.records import RESULT_SYMBOLS, QuarantineRecord, iso, parse_when, seconds, usd

AHEAD_DAYS = 7
CONTRACTS = ("ttft", "refusal", "schema", "language", "hygiene", "tools")
STATE_COLOURS = {
    "healthy": "#1a7f37",
    "suspect": "#bf8700",
    "quarantined": "#cf222e",
    "excluded": "#6e40c9",
    "unknown": "#6e7781",
}
FLOOR_BREACHED_COLOUR = "#a40e26"  # darker than a quarantine: the whole model is short of capacity
# Latency is information beside the routing state, drawn as an outlined tag, not a pill.
LATENCY_COLOURS = {"healthy": "#1a7f37", "degraded": "#bc4c00", "unknown": "#8c959f"}
RESULT_COLOURS = {
    "pass": "#2da44e",
    "fail": "#cf222e",
    "inconclusive": "#bf8700",
    "transport_error": "#8c959f",
    "not_applicable": "#d0d7de",
}
EVENT_LABELS = {
    "quarantine": "quarantined",
    "release": "released",
    "would_quarantine": "would quarantine",
    "floor_held": "capacity floor held",
    "probe_weak": "probe weak",
    "model_wide": "model-wide failure",
    "operator_alert": "operator alert",
    "exclusion_added": "exclusion added",
    "exclusion_removed": "exclusion removed",
    "maintenance_added": "maintenance window added",
    "maintenance_removed": "maintenance window ended",
}


STATE_MEANING = {
    "quarantined": "left out by canary (a defect reproduced)",
    "excluded": "left out by a built-in or runtime entry",
    "suspect": "a contract failed; one more failing round quarantines it",
    "healthy": "routable, its contracts hold",
    "unknown": "not judged yet",
}


# -- small pieces --------------------------------------------------------------------------


def _ago(now: datetime, then: datetime | None) -> str:
    """How long ago ``then`` was, or how long until it is ("in ...")."""
    if then is None:
        return "never"
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "in " + _span(-seconds)
    return _span(seconds) + " ago"


def _span(seconds: float) -> str:
    """A span of time as people say it: minutes up to two hours ("under 1 min" below one: the
    page refreshes every 30 s), then hours up to two days, then days ("in 7 days", not in
    10,076 min); a quarantine's end also shows its date."""
    if seconds < 60:
        return "under 1 min"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400):,} days"


def _until(now: datetime, until: datetime | None) -> str:
    if until is None:
        return ""
    return f"until {iso(until)} ({_ago(now, until)})"


def _latency(p: ProviderView) -> str:
    lat = p.latency
    colour = LATENCY_COLOURS.get(lat.state, "#8c959f")
    figures = [f"p95 {seconds(lat.day.get('p95'))} s / 7 d {seconds(lat.week.get('p95'))} s"]
    if lat.peers_p95_24h_s is not None:
        figures.append(f"peers {lat.peers_p95_24h_s:.2f} s")
    if lat.openrouter_ms:
        shown = " / ".join(
            f"{q} {lat.openrouter_ms[q] / 1000:.2f}"
            for q in ("p50", "p99")
            if q in lat.openrouter_ms
        )
        figures.append(f"OpenRouter {shown} s")
    title = f"latency {lat.state}: 24 h p95 over {lat.bound_p95_s:g} s is degraded (information)"
    return (
        f'<span class="lat" style="border-color:{colour};color:{colour}" '
        f'title="{escape(title)}">{escape(lat.state)}</span>'
        f'<div class="latfig">{escape(" · ".join(figures))}</div>'
    )


def _cost_line(section: ModelSection, day: CostDay | None) -> str:
    cost = section.cost
    if cost is None:
        return ""
    last = cost["last_round"]
    parts = [
        f"last round {usd(last['cost_usd'] if last else None)}",
        f"24 h {usd(cost['last_24h_usd'])}",
        f"today {usd(cost['today_usd'])}",
    ]
    if day is not None and day["daily_budget_usd"] is not None:
        parts.append(
            f"budget {usd(day['daily_budget_usd'])}/day (all models), "
            f"{usd(day['budget_left_usd'])} left"
        )
    skipped = last["skipped"] if last else []
    if skipped:
        names = ", ".join(str(s["provider"]) for s in skipped)
        parts.append(f"skipped last round: {names} ({skipped[0]['reason'] or 'budget'})")
    return f'<p class="cost">Probe cost: {escape(" · ".join(parts))}</p>'


def _pill(state: str) -> str:
    return _coloured_pill(state, STATE_COLOURS.get(state, "#6e7781"))


def _chips(results: Mapping[str, ResultMark]) -> str:
    chips = []
    for contract in CONTRACTS:
        result = results.get(contract)
        if result is None:
            continue
        value = result.result
        colour = RESULT_COLOURS.get(value, "#8c959f")
        title = f"{contract}: {value} — {result.detail or ''}"
        chips.append(
            f'<span class="chip" style="border-color:{colour};color:{colour}" '
            f'title="{escape(title)}">'
            f"{escape(contract)} {escape(RESULT_SYMBOLS.get(value, '·'))}</span>"
        )
    return "".join(chips) or '<span class="muted">no results yet</span>'


def sparkline(
    values: tuple[float, ...] | list[float],
    *,
    slow_s: float,
    bound_s: float,
    width: int = 140,
    height: int = 30,
) -> str:
    """Bars of recent ttft samples scaled to their own maximum, so their spread shows: orange
    above the degraded-latency bound ``slow_s`` (dashed when in range), red above ``bound_s``."""
    if not values:
        return '<span class="muted">–</span>'
    top = max(values) * 1.25 or 1.0
    step = width / max(len(values), 1)
    bars = []
    for i, value in enumerate(values):
        h = max(1.0, value / top * (height - 2))
        colour = "#cf222e" if value > bound_s else "#bc4c00" if value > slow_s else "#57606a"
        bars.append(
            f'<rect x="{i * step:.1f}" y="{height - h:.1f}" width="{max(step - 1, 1):.1f}" '
            f'height="{h:.1f}" fill="{colour}"><title>{value:.2f} s</title></rect>'
        )
    line = ""
    if slow_s < top:
        y = height - slow_s / top * (height - 2)
        line = (
            f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#bc4c00" stroke-dasharray="3 2">'
            f"<title>degraded above {slow_s:g} s</title></line>"
        )
    return (
        f'<span class="sparkwrap"><svg class="spark" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="time to first token">'
        f'{"".join(bars)}{line}</svg><span class="sparkmax">{max(values):.1f} s</span></span>'
    )


def _percentiles(summary: Mapping[str, float | None]) -> str:
    return " / ".join(seconds(summary.get(q)) for q in ("p50", "p95", "p99"))


def timeline(quarantines: list[QuarantineRecord], now: datetime, *, width: int = 900) -> str:
    """Quarantines from two weeks back to a week ahead as bars, one row per provider."""
    if not quarantines:
        return f'<p class="muted">No quarantine in the last {TIMELINE_DAYS} days.</p>'
    start = now - timedelta(days=TIMELINE_DAYS)
    end = now + timedelta(days=AHEAD_DAYS)
    label_w, row_h, pad = 170, 22, 24
    span = (end - start).total_seconds()
    plot_w = width - label_w - pad
    tags = sorted({q["provider"] for q in quarantines})
    height = row_h * len(tags) + 24

    def x(when: datetime) -> float:
        clipped = min(max(when, start), end)
        return label_w + (clipped - start).total_seconds() / span * plot_w

    parts = []
    for day in range(0, TIMELINE_DAYS + AHEAD_DAYS + 1, 3):
        when = start + timedelta(days=day)
        tx = x(when)
        parts.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="0" y2="{height - 18}" stroke="#eaeef2"/>'
            f'<text x="{tx:.1f}" y="{height - 4}" class="tick">{when.strftime("%d %b")}</text>'
        )
    for row, tag in enumerate(tags):
        y = row * row_h + 3
        parts.append(f'<text x="0" y="{y + 13}" class="lane">{escape(tag)}</text>')
        for q in (q for q in quarantines if q["provider"] == tag):
            since = parse_when(q["since"]) if q["since"] else start
            end_text = q.get("released_at") or q["until"]
            until = parse_when(end_text) if end_text else end
            active = q.get("released_at") is None and until > now
            colour = "#cf222e" if active else "#ff8182"
            x0, x1 = x(since), x(until)
            title = (
                f"{tag}: step {q.get('step')}, {q['since']} → {q['until']}"
                + (
                    f", released {q['released_at']} ({q.get('release_why')})"
                    if q.get("released_at")
                    else ""
                )
                + f" — {q.get('reason') or ''}"
            )
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 3):.1f}" '
                f'height="{row_h - 6}" rx="3" '
                f'fill="{colour}"><title>{escape(title)}</title></rect>'
            )
    nx = x(now)
    parts.append(
        f'<line x1="{nx:.1f}" x2="{nx:.1f}" y1="0" y2="{height - 18}" '
        'stroke="#0969da" stroke-width="2"/>'
        f'<text x="{nx + 3:.1f}" y="10" class="now">now</text>'
    )
    return (
        f'<svg class="timeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="quarantine timeline">{"".join(parts)}</svg>'
    )


def _ignore_block(section: ModelSection, now: datetime) -> str:
    published = section.published
    if published is None:
        return '<div class="list warn">The ignore list has not been read from the store yet.</div>'
    doc = published.document
    built = _ago(now, published.generated_at)
    breached = doc["floor_breached"]
    head = [_coloured_pill("floor breached", FLOOR_BREACHED_COLOUR)] if breached else []
    if published.stale:
        head.append(
            f"{_coloured_pill('stale', '#cf222e')} last good list built {built}: "
            "the store is unreachable"
        )
    elif breached:  # read fresh from the store, but nothing about this list is well
        head.append(f'<span class="muted">up to date, built {built}</span>')
    else:
        head.append(f"{_coloured_pill('fresh', '#1a7f37')} built {built}")
    entries = "".join(
        f'<li><code>{escape(e["provider"])}</code> <span class="layer layer-{escape(e["layer"])}">'
        f"{escape(e['layer'])}</span> {escape(e['reason'])}"
        f"{' · until ' + escape(e['until']) if e['until'] else ''}</li>"
        for e in doc["entries"]
    )
    body = (
        f"<ul>{entries}</ul>"
        if entries
        else '<p class="muted">Nothing ignored: every provider is routable.</p>'
    )
    warn = published.stale or breached
    return (
        f'<div class="list{" warn" if warn else ""}">'
        '<div class="listhead"><b>Published ignore list</b> '
        f"{' '.join(head)} · policy <code>{escape(doc['policy_version'])}</code></div>"
        f"{_floor_block(doc)}"
        f"<div><code>provider.ignore = {escape(json.dumps(doc['ignore']))}</code></div>"
        f"{body}</div>"
    )


def _coloured_pill(text: str, colour: str) -> str:
    return f'<span class="pill" style="background:{colour}">{escape(text)}</span>'


def _floor_block(doc: IgnoreDocument) -> str:
    usable, floor = doc["usable_endpoints"], doc["capacity_floor"]
    withheld = doc["withheld"]
    held = f" · withheld to hold it: {escape(', '.join(withheld))}" if withheld else ""
    if usable is None:
        return f'<div class="floor muted">capacity floor {floor}: not listed yet</div>'
    if doc["floor_breached"]:
        return (
            f'<div class="floor breached">{usable} usable endpoint(s), below the capacity floor '
            f"of {floor}{held}</div>"
        )
    return f'<div class="floor">capacity floor {floor}: {usable} usable endpoint(s){held}</div>'


def _provider_rows(section: ModelSection, now: datetime, bound: float, slow: float) -> str:
    if not section.providers:
        return '<p class="muted">No provider seen yet: the first round has not run.</p>'
    rows = []
    for p in section.providers:
        notes = ["positive control: expected to filter"] if p.provider in section.controls else []
        if p.quarantine_until is not None:
            notes.append(
                f"quarantined {_until(now, p.quarantine_until)}, step {p.quarantine_step or '?'}"
            )
        notes.extend(p.exclusion_notes)
        rows.append(
            f'<tr class="state-{escape(p.state)}"><td><code>{escape(p.provider)}</code></td>'
            f"<td>{_pill(p.state)}</td><td class=num>{p.failing_streak}</td>"
            f"<td>{_chips(p.results)}</td>"
            f"<td class=num>{_percentiles(p.latency.day)}</td>"
            f"<td>{_latency(p)}</td>"
            f"<td>{sparkline(p.latency.spark, slow_s=slow, bound_s=bound)}</td>"
            f"<td class=note>{escape('; '.join(notes))}</td></tr>"
        )
    return (
        "<table><thead><tr><th>Provider</th><th>State</th><th>Failing rounds</th>"
        "<th>Last round</th>"
        "<th>TTFT p50 / p95 / p99 s (24 h)</th><th>Latency</th><th>Recent TTFT</th>"
        "<th>Notes</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _events(section: ModelSection, now: datetime) -> str:
    if not section.events:
        return ""
    items = [
        f'<li><span class=muted title="{iso(e.at)}">{escape(_ago(now, e.at))}</span> '
        f"<b>{escape(EVENT_LABELS.get(e.event, e.event))}</b>"
        f"{' <code>' + escape(e.tag) + '</code>' if e.tag else ''}"
        f" <span class=muted>by {escape(e.actor)}</span> "
        f"{escape(explanation(e.decided))}</li>"
        for e in section.events
    ]
    return f"<h3>Latest decisions</h3><ul class=events>{''.join(items)}</ul>"


def _reports(section: ModelSection, now: datetime) -> str:
    """Apps' reports of the last day, per endpoint: the symptom and the outcome (never a note)."""
    if not section.reports:
        return ""
    items = [
        f'<li><span class=muted title="{iso(r.at)}">{escape(_ago(now, r.at))}</span> '
        f"<code>{escape(', '.join(r.tags) or r.provider or '?')}</code> "
        f"{escape(r.symptom)}: <b>{escape(r.outcome.replace('_', ' '))}</b></li>"
        for r in section.reports
    ]
    return f"<h3>Recent reports (24 h)</h3><ul class=events>{''.join(items)}</ul>"


def _section(
    section: ModelSection, now: datetime, bound: float, slow: float, day: CostDay | None
) -> str:
    counts: dict[str, int] = {}
    for p in section.providers:
        counts[p.state] = counts.get(p.state, 0) + 1
    summary = " ".join(
        f"{_pill(state)}&nbsp;{n}"
        for state, n in sorted(counts.items(), key=lambda kv: STATES.index(kv[0]))
    )
    error = f'<div class="list warn">{escape(section.error)}</div>' if section.error else ""
    return (
        f'<section><h2>{escape(section.model)} <span class="summary">{summary}</span></h2>{error}'
        f"{_ignore_block(section, now)}{_provider_rows(section, now, bound, slow)}"
        f"{_cost_line(section, day)}"
        + (f'<p class="cost">{escape(section.equality)}</p>' if section.equality else "")
        + f"<h3>Quarantine timeline ({TIMELINE_DAYS} days back, {AHEAD_DAYS} ahead)</h3>"
        f"{timeline(section.quarantines, now)}"
        f"{_events(section, now)}{_reports(section, now)}</section>"
    )


CSS = (Path(__file__).with_name("status.css")).read_text(encoding="utf-8")
LEGEND = (
    '<section class="legend"><h3>Legend</h3><p>'
    + " ".join(f"{_pill(state)} {escape(STATE_MEANING[state])}" for state in STATES)
    + "</p><p>Contract marks: ✓ pass · ✗ fail · ? inconclusive · ⚡ transport error (no evidence "
    "either way) · – not applicable. Latency is information only: it never changes a state. "
    "Units: how long ago or until something happens is in minutes (min), hours (h) or days "
    "(hover a decision for its time); time to first token (TTFT, the wait for the first answer token) is in seconds "
    "(s), over windows of 24 hours (24 h) and 7 days (7 d); dates are UTC.</p></section>"
)


def render(context: PageContext) -> str:
    now, bound_s = context.now, context.ttft_bound_s
    store = (
        '<span class="pill" style="background:#1a7f37">store ok</span>'
        if context.store_ok
        else '<span class="pill" style="background:#cf222e">store unreachable</span>'
    )
    sections = "".join(
        _section(s, now, bound_s, context.slow_s, context.cost_day) for s in context.sections
    )
    day = context.cost_day
    spend = f" · probes today {usd(day['today_usd'])}" if day else ""
    if not sections:
        sections = (
            '<section><p class="muted">No model is watched: add [[models]] to the settings.</p>'
        )
        sections += "</section>"
    rounds = f"last round {_ago(now, context.last_round_at)} · " + (
        f"next {_ago(now, context.next_round_at)} · "
        if context.next_round_at is not None
        else "no round scheduled · "
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        '<meta http-equiv="refresh" content="30"><title>canary status</title>'
        f"<style>{CSS}</style></head><body><header><h1>canary</h1>"
        f'<span class="meta">mode <b>{escape(context.mode)}</b> · '
        f"round every {context.interval_minutes:g} min · {rounds}"
        f"list read {_ago(now, context.last_refresh_at)}{escape(spend)} · "
        f"{escape(iso(now) or '')}</span> "
        f"{store}</header>"
        f"<main>{sections}{LEGEND}</main></body></html>"
    )
