"""`canary probe`: one probe pass now against the configured upstream; no state changes."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from canary.cli.common import fail, print_json, settings_from


def register(app: typer.Typer) -> None:
    app.command("probe", help="Probe a model's providers now, pinned, and print each verdict.")(probe)


def probe(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option(help="Model id (author/slug).")] = None,
    provider: Annotated[
        list[str] | None, typer.Option(help="Only these endpoint tags (repeatable).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Print what one round of the configured models costs.")
    ] = False,
) -> None:
    import asyncio

    settings = settings_from(ctx)
    if estimate:
        result = asyncio.run(_estimate(settings))
        if json_output:
            print_json(result)
        else:
            for row in result["models"]:
                typer.echo(
                    f"{row['model']}: {row['endpoints']} endpoints, {row['probes']} probes, "
                    f"${row['usd']:.6f} per round"
                )
            typer.echo(
                f"total ${result['usd_per_round']:.6f} per round, ${result['usd_per_day']:.4f} per day "
                f"at one round every {settings.interval_minutes:g} minutes"
            )
        return
    if model is None:
        fail("--model is required (or use --estimate)")
    document = asyncio.run(_probe(settings, model, provider or []))
    if json_output:
        print_json(document)
    else:
        _print_human(document)


async def _probe(settings: Any, model: str, tags: list[str]) -> dict[str, Any]:
    from canary.openrouter.client import ListingError
    from canary.prober import Prober
    from canary.probes import load_probes
    from canary.text.detect import LanguageAnalyzer
    from canary.wiring import openrouter_client

    probes = load_probes(settings.probes_dir, settings.languages)
    analyzer = LanguageAnalyzer(settings.languages)
    async with openrouter_client(settings) as client:
        try:
            endpoints = await client.list_endpoints(model)
        except ListingError as exc:
            fail(f"cannot list the endpoints of {model}: {exc}")
        if tags:
            known = sorted(e.tag for e in endpoints)
            unknown = [t for t in tags if t not in known]
            if unknown:
                fail(f"unknown provider {', '.join(unknown)} for {model}; known: {', '.join(known)}")
            endpoints = [e for e in endpoints if e.tag in tags]
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
        )
        import time

        probings = await prober.probe_endpoints(endpoints, {}, int(time.time() // 1800))
    return probe_document(model, probings)


def probe_document(model: str, probings: list[Any]) -> dict[str, Any]:
    from canary.core.model import Result

    providers = []
    for p in probings:
        results = [r for r in p.results if r.result is not Result.not_applicable]
        if any(r.result is Result.fail for r in results):
            verdict = "fail"
        elif results and all(r.result is Result.passed for r in results):
            verdict = "pass"
        else:
            verdict = "inconclusive"
        providers.append(
            {
                "provider": p.endpoint.tag,
                "name": p.endpoint.provider_name,
                "language": p.language,
                "verdict": verdict,
                "contracts": {
                    r.contract.value: {
                        "result": r.result.value,
                        "detail": r.detail,
                        "figure": r.figure,
                        "reason": r.reason,
                        "sample": r.sample,
                    }
                    for r in p.results
                },
            }
        )
    return {"model": model, "providers": providers}


def _print_human(document: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    colours = {"pass": "green", "fail": "red", "inconclusive": "yellow"}
    table = Table(title=f"probe {document['model']}", show_lines=True)
    table.add_column("provider")
    table.add_column("verdict")
    table.add_column("contract results")
    for p in document["providers"]:
        lines = [
            f"[{colours.get(c['result'], 'dim')}]{name}: {c['result']}[/] {c['detail']}"
            for name, c in p["contracts"].items()
        ]
        verdict = p["verdict"]
        table.add_row(p["provider"], f"[{colours.get(verdict, 'dim')}]{verdict}[/]", "\n".join(lines))
    Console().print(table)


async def _estimate(settings: Any) -> dict[str, Any]:
    from canary.core.cost import estimate_round_cost
    from canary.core.model import Contract
    from canary.openrouter.client import ListingError
    from canary.probes import load_probes
    from canary.wiring import openrouter_client

    probes = load_probes(settings.probes_dir, settings.languages)
    rows = []
    async with openrouter_client(settings) as client:
        for model in settings.models:
            try:
                endpoints = await client.list_endpoints(model.id)
            except ListingError as exc:
                fail(f"cannot list the endpoints of {model.id}: {exc}")
            usd = 0.0
            count = 0
            for e in endpoints:
                n = settings.ttft_samples + 2 + sum(
                    1 for c in (Contract.schema, Contract.tools) if probes.applicable(c, e)
                )
                count += n
                usd += estimate_round_cost([e], n, 250, settings.openrouter.max_tokens)
            rows.append({"model": model.id, "endpoints": len(endpoints), "probes": count, "usd": usd})
    per_round = sum(r["usd"] for r in rows)
    return {
        "models": rows,
        "usd_per_round": per_round,
        "usd_per_day": per_round * (24 * 60 / settings.interval_minutes),
    }
