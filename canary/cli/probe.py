"""`canary probe`: one probe pass now against the configured upstream; no state changes.

It lists the model's endpoints, sends each the round's pinned probes through the real Prober and
judges them as a round does: the model's positive controls are always probed too (also with
``--provider``), and the round-level rules run through the same core call with the same inputs
as the runner's (:func:`canary.core.verdict.judge_round` with the listing's tags and the
endpoints usable on the list as published now): a control that does not filter makes the refusal
probe weak (``probe_weak``), a control missing from the listing is ``control_missing``, and a
contract failing on most usable endpoints is model-wide, which only the whole model can show
(with ``--provider`` it is ``"not evaluated"``). It prints each endpoint's verdict with every
contract's evidence.

The list as published is read from the store when there is one to read (runtime exclusions and
quarantines; never created, never written: a missing SQLite file is not opened); without one it
is the built-in list alone, and ``"published_from"`` says so. Nothing is recorded, no quarantine
moves. ``--estimate`` prints what one round of the configured models costs at the endpoints'
published prices.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, NotRequired, TypedDict

import typer
from pydantic import JsonValue
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from canary.cli.common import (
    fail,
    missing_sqlite_file,
    print_json,
    require_api_key,
    settings_from,
)
from canary.config.settings import SUPPORTED_LANGUAGES, Settings
from canary.core.events import ControlMissing, ModelWide, ProbeWeak
from canary.core.floor import Publication, publish
from canary.core.identity import Listed, named_tags
from canary.core.model import Endpoint, Exclusion, Layer
from canary.core.policy import PolicyRules
from canary.core.verdict import RoundOutcome, judge_round
from canary.service.logs import first_line
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store

if TYPE_CHECKING:
    from canary.rounds.prober import EndpointProbing

NOT_EVALUATED = "not evaluated"


class ContractRecord(TypedDict):
    result: str
    detail: str
    figure: float | None
    reason: str | None
    sample: str


class ServedId(TypedDict):
    id: str
    expected: bool


class ProviderProbe(TypedDict):
    provider: str
    name: str
    language: str
    control: bool
    served_model: ServedId | None  # the model its answers reported, and whether it is expected
    verdict: str
    contracts: dict[str, ContractRecord]


class ProbeDocument(TypedDict):
    model: str
    providers: list[ProviderProbe]
    probe_weak: (
        dict[str, JsonValue] | None
    )  # which control did not fail refusal, and what it returned
    control_missing: dict[str, JsonValue] | None  # a control not in the listing
    model_wide: list[dict[str, JsonValue]] | str  # NOT_EVALUATED when only part was probed
    published_from: NotRequired[str]  # store, or the built-in list alone (_probe)
    usable: NotRequired[list[str] | None]
    maintenance: NotRequired[list[str]]  # in a window: left out of the model-wide rule


class EstimateRow(TypedDict):
    model: str
    endpoints: int
    probes: int
    usd: float


class Estimate(TypedDict):
    models: list[EstimateRow]
    prompt_tokens_per_probe: int
    completion_tokens_per_probe: int
    usd_per_round: float
    usd_per_day: float


def register(app: typer.Typer) -> None:
    help_text = "Probe a model's providers now, pinned, and print each verdict."
    app.command("probe", help=help_text)(probe)


def probe(
    ctx: typer.Context,
    model: Annotated[
        str | None, typer.Option("--model", "-m", metavar="MODEL", help="Model id (author/slug).")
    ] = None,
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider", "-p", metavar="PROVIDER", help="Only these endpoint tags (repeatable)."
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    estimate: Annotated[
        bool,
        typer.Option("--estimate", help="Print what one round of the configured models costs."),
    ] = False,
) -> None:
    settings = settings_from(ctx)
    if estimate:
        from canary.rounds.aio import run as run_to_completion

        result = run_to_completion(_estimate(settings))
        if json_output:
            print_json(result)
        else:
            _print_estimate(result, settings.interval_minutes)
        return
    if model is None:
        fail("--model is required (or use --estimate)")
    require_api_key(settings, "probe")
    from canary.rounds.aio import run as run_to_completion

    document = run_to_completion(_probe(settings, model, provider or []))
    if json_output:
        print_json(document)
    else:
        _print_human(document)


async def _probe(settings: Settings, model: str, tags: Sequence[str]) -> ProbeDocument:
    from canary.config.probe_set import load_probes
    from canary.core.plan import round_index
    from canary.openrouter.client import ListingError
    from canary.rounds.prober import Prober
    from canary.rounds.wiring import openrouter_client
    from canary.text.detect import LanguageAnalyzer

    probes = load_probes(settings.probes_dir, settings.languages)
    analyzer = LanguageAnalyzer(SUPPORTED_LANGUAGES)  # detect every language, probe the configured
    controls = settings.model(model).positive_controls
    async with openrouter_client(settings) as client:
        try:
            endpoints = await client.list_endpoints(model)
        except ListingError as exc:
            fail(f"cannot list the endpoints of {model}: {exc}")
        now = datetime.now(UTC)
        listed = [e.tag for e in endpoints]
        published, source, windows = published_now(
            settings, model, endpoints, probes.builtin_exclusions, now
        )
        if tags:
            known = sorted(e.tag for e in endpoints)
            unknown = [t for t in tags if t not in known]
            if unknown:
                fail(
                    f"unknown provider {', '.join(unknown)} for {model}; "
                    f"known: {', '.join(known) or 'none'}"
                )
            # the controls too: without them the refusal probe cannot be trusted
            endpoints = [e for e in endpoints if e.tag in tags or e.tag in controls]
        prober = Prober(
            client,
            probes,
            analyzer.analyze,
            languages=settings.languages,
            ttft_threshold_s=settings.ttft_threshold_s,
            ttft_samples=settings.ttft_samples,
            max_tokens=settings.openrouter.max_tokens,
            concurrency=settings.concurrency,
            per_provider_concurrency=settings.per_provider_concurrency,
            positive_controls={model: controls},
        )
        index = round_index(now, settings.interval_minutes)  # this round's languages
        probings = await prober.probe_endpoints(endpoints, {}, index)
    outcome = judge_probed(
        settings, model, probings, whole_model=not tags, listed=listed, usable=published.usable,
        maintenance=windows,
    )  # fmt: skip
    document = probe_document(model, probings, outcome, controls, whole_model=not tags)
    document["published_from"] = source
    document["usable"] = None if published.usable is None else list(published.usable)
    document["maintenance"] = sorted(windows)
    return document


def published_now(
    settings: Settings,
    model: str,
    endpoints: Sequence[Endpoint],
    builtin: Sequence[Exclusion],
    now: datetime,
) -> tuple[Publication, str, frozenset[str]]:
    """The model's list as published now over this listing, as a round starts from it, where
    its layers came from (``"store"``, or the built-in list alone when there is no store to
    read: a missing SQLite file is never created, or it cannot be read), and the endpoints in a
    maintenance window (left out of the model-wide rule)."""
    listing = [Listed.of(e) for e in endpoints]
    runtime: Sequence[Exclusion] = ()
    quarantines: Sequence[Exclusion] = ()
    windows: Sequence[Exclusion] = ()
    missing = missing_sqlite_file(settings.database_url)
    if missing is not None:
        source = f"built-in list only: no database at {missing}"
    else:
        try:
            with Store(settings.database_url) as store:
                layers = store.model_layers([model], now)[model]
                windows = store.active_exclusions(model, now, Layer.maintenance)
            runtime, quarantines, source = layers.runtime, layers.quarantines, "store"
        except STORE_ERRORS as exc:
            source = f"built-in list only: the store cannot be read ({first_line(exc)})"
    watched = settings.model(model)
    mine = [e for e in builtin if e.model == model]
    published = publish(
        model,
        listing,
        mine,
        runtime,
        quarantines,
        floor=watched.capacity_floor,
        now=now,
        controls=watched.controls,
    )
    return published, source, named_tags(windows, listing, now)


def judge_probed(
    settings: Settings,
    model: str,
    probings: Sequence[EndpointProbing],
    *,
    whole_model: bool,
    listed: Sequence[str],
    usable: Sequence[str] | None,
    maintenance: Collection[str] = (),
) -> RoundOutcome:
    """The round-level rules over what was probed, as the runner applies them: the same core
    call with the listing's tags (a control missing from it is ``control_missing``) and the
    endpoints usable on the published list, but those in ``maintenance`` (the only ones
    model-wide counts)."""

    rules = PolicyRules.of(settings.policy, settings.mode, settings.interval_minutes)
    if not whole_model:
        # Model-wide compares an endpoint with the model's others; a subset cannot show it, so
        # its share is set where no failure count can exceed it.
        rules = replace(rules, model_wide_share=1.0)
    return judge_round(
        model,
        {p.endpoint.tag: p.results for p in probings},
        positive_controls=settings.model(model).positive_controls,
        rules=rules,
        listed=listed,
        usable=usable,
        maintenance=maintenance,
    )


def verdict_of(verdict: str) -> str:
    """pass or fail as judged; anything else (transport errors, weak probes) is inconclusive."""
    return verdict if verdict in ("pass", "fail") else "inconclusive"


def probe_document(
    model: str,
    probings: Sequence[EndpointProbing],
    outcome: RoundOutcome,
    controls: Sequence[str] = (),
    *,
    whole_model: bool = True,
) -> ProbeDocument:
    """The `--json` object: {"model", "providers": [{"provider", "verdict", "contracts"}],
    "probe_weak", "control_missing", "model_wide"} (`_probe` adds "published_from" and
    "usable")."""
    from canary.core.served import is_expected, served_model

    weak = next((e for e in outcome.events if isinstance(e, ProbeWeak)), None)
    missing = next((e for e in outcome.events if isinstance(e, ControlMissing)), None)
    wide = [e.detail for e in outcome.events if isinstance(e, ModelWide)]
    providers: list[ProviderProbe] = []
    for p in probings:
        verdict = outcome.verdicts[p.endpoint.tag]
        served = served_model(p.observations)
        permaslug = p.endpoint.raw.get("model_id")
        providers.append(
            {
                "provider": p.endpoint.tag,
                "name": p.endpoint.provider_name,
                "language": p.language,
                "control": p.endpoint.tag in controls,
                # the model its answers reported, and whether that is an expected id
                "served_model": None
                if served is None
                else {
                    "id": served,
                    "expected": is_expected(
                        served, model, permaslug if isinstance(permaslug, str) else None
                    ),
                },
                "verdict": verdict_of(verdict.verdict.value),
                "contracts": {
                    r.contract.value: {
                        "result": r.result.value,
                        "detail": r.detail,
                        "figure": r.figure,
                        "reason": r.reason,
                        "sample": r.sample,
                    }
                    for r in verdict.results
                },
            }
        )
    return {
        "model": model,
        "providers": providers,
        # the weak-probe rule: which control did not fail refusal, and what it returned
        "probe_weak": None if weak is None else weak.detail,
        # a control not in the listing: the refusal results are no evidence either
        "control_missing": None if missing is None else missing.detail,
        "model_wide": wide if whole_model else NOT_EVALUATED,
    }


def _print_human(document: ProbeDocument) -> None:
    colours = {"pass": "green", "fail": "red", "inconclusive": "yellow"}
    table = Table(title=f"probe {document['model']}", show_lines=True)
    table.add_column("provider")
    table.add_column("verdict")
    table.add_column("contract results")
    for p in document["providers"]:
        lines = []
        for name, c in p["contracts"].items():
            colour = colours.get(c["result"], "dim")
            line = f"[{colour}]{name}: {c['result']}[/] {escape(c['detail'])}"
            if c["sample"] and c["result"] != "pass":
                line += f"\n  [dim]{escape(c['sample'])}[/]"
            lines.append(line)
        verdict = p["verdict"]
        control = " (control)" if p["control"] else ""
        served = p["served_model"]
        if served is not None and not served["expected"]:
            lines.append(f"[red]serves {escape(served['id'])} (unexpected id)[/]")
        table.add_row(
            f"{escape(p['provider'])}{control}\n[dim]{p['language']}[/]",
            f"[{colours.get(verdict, 'dim')}]{verdict}[/]",
            "\n".join(lines),
        )
    console = Console(width=140)
    console.print(table)
    weak = document["probe_weak"]
    if weak is not None:
        console.print(
            f"[yellow]probe weak[/]: {escape(str(weak['why']))}; refusal results are not evidence"
        )
    missing = document.get("control_missing")
    if missing is not None:
        console.print(
            f"[yellow]control missing[/]: {escape(str(missing['why']))}; refusal results are not "
            "evidence"
        )
    source = document.get("published_from")
    if source is not None and source != "store":
        console.print(f"[dim]usable endpoints counted on the {escape(source)}[/]")
    wide = document["model_wide"]
    if wide == NOT_EVALUATED:
        console.print("model-wide: not evaluated (only part of the model was probed)")
    for event in wide if isinstance(wide, list) else []:
        console.print(f"[yellow]model-wide[/]: {escape(str(event['why']))}")


async def _estimate(settings: Settings) -> Estimate:
    from canary.config.probe_set import load_probes
    from canary.core.cost import ESTIMATE_PROMPT_TOKENS, estimate_round_cost
    from canary.core.plan import plan_endpoint
    from canary.openrouter.client import ListingError
    from canary.rounds.wiring import openrouter_client

    if not settings.models:
        fail("no models configured (set `models` in the settings file or CANARY_MODELS)")
    probes = load_probes(settings.probes_dir, settings.languages)
    rows: list[EstimateRow] = []
    async with openrouter_client(settings) as client:
        for model in settings.models:
            try:
                endpoints = await client.list_endpoints(model.id)
            except ListingError as exc:
                fail(f"cannot list the endpoints of {model.id}: {exc}")
            counts = {
                e.tag: len(
                    plan_endpoint(
                        e,
                        None,
                        index=0,
                        languages=settings.languages,
                        ttft_samples=settings.ttft_samples,
                        applicable=probes.applicable,
                    )
                )
                for e in endpoints
            }
            usd = sum(
                estimate_round_cost(
                    [e], counts[e.tag], ESTIMATE_PROMPT_TOKENS, settings.openrouter.max_tokens
                )
                for e in endpoints
            )
            rows.append(
                {
                    "model": model.id,
                    "endpoints": len(endpoints),
                    "probes": sum(counts.values()),
                    "usd": usd,
                }
            )
    per_round = sum(r["usd"] for r in rows)
    return {
        "models": rows,
        "prompt_tokens_per_probe": ESTIMATE_PROMPT_TOKENS,
        "completion_tokens_per_probe": settings.openrouter.max_tokens,
        "usd_per_round": per_round,
        "usd_per_day": per_round * (24 * 60 / settings.interval_minutes),
    }


def _print_estimate(result: Estimate, interval_minutes: float) -> None:
    for row in result["models"]:
        typer.echo(
            f"{row['model']}: {row['endpoints']} endpoints, {row['probes']} probes, "
            f"${row['usd']:.6f} per round"
        )
    typer.echo(
        f"total ${result['usd_per_round']:.6f} per round, ${result['usd_per_day']:.4f} per day "
        f"at one round every {interval_minutes:g} minutes (each probe counted at "
        f"{result['prompt_tokens_per_probe']} prompt + {result['completion_tokens_per_probe']} "
        "completion tokens; a contract that fails its first look adds 2 re-check probes)"
    )
