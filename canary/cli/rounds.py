"""`canary round`, `canary serve`, `canary drill`: rounds now, on a schedule, on a virtual clock."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import JsonValue

from canary.cli.common import (
    fail,
    print_json,
    require_api_key,
    settings_from,
    to_second,
)
from canary.config.definitions import ProbeDefinitionError
from canary.config.settings import Settings, SettingsError, env_value, redact_url
from canary.service.logs import first_line, scrub
from canary.store.engine import STORE_ERRORS
from canary.store.rows import RoundRow

if TYPE_CHECKING:
    from canary.rounds.outcome import ModelRound
    from canary.rounds.wiring import Wiring


def register(app: typer.Typer) -> None:
    app.command("round", help="Run one round now for every watched model, then exit.")(round_now)
    app.command("serve", help="Run the scheduler and the HTTP API.")(serve)
    app.command("drill", help="Run N real rounds against a scenario on a virtual clock.")(drill)


def round_now(
    ctx: typer.Context,
    extra: Annotated[
        bool,
        typer.Option(
            "--now",
            help="An extra round at once, outside the schedule: recorded and shown, but it "
            "decides nothing (no count moves, no quarantine or release), so failing rounds in a "
            "row stay one interval apart.",
        ),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object per decision.")
    ] = False,
) -> None:
    from canary.core.oneshot import unfinished
    from canary.core.plan import slot_of
    from canary.rounds.aio import run as run_to_completion
    from canary.rounds.runner import RoundRunner, runner_id
    from canary.rounds.scheduler import round_turn
    from canary.rounds.wiring import openrouter_client
    from canary.service.daemon import lease_renew_s
    from canary.service.heartbeat import ping
    from canary.service.notify import Notifier
    from canary.tracing import TracingUnavailable

    settings = settings_from(ctx)
    if not settings.models:
        fail("no models to watch: set [[models]] in the settings file or CANARY_MODELS")
    require_api_key(settings, "round")
    wiring = _open_wiring(settings)

    async def work() -> list[ModelRound]:
        async with openrouter_client(settings) as client:
            runner = RoundRunner(wiring, client, holder=holder, decides=not extra)
            return await runner.run(scheduled_at=datetime.now(UTC) if extra else None)

    holder = runner_id()
    tracer = None
    try:
        try:
            tracer = wiring.tracer
        except TracingUnavailable as exc:
            fail(str(exc), code=2)
        ran, result = run_to_completion(
            round_turn(
                wiring.store,
                holder,
                work,
                ttl_s=settings.lease_ttl_s,
                renew_every_s=lease_renew_s(settings),
            )
        )
        if not ran:
            fail("another replica holds the round lease: it runs the rounds now", code=1)
        reports = result or []
        Notifier(wiring.store, settings.webhooks, settings.notifiers).send_pending()
        # a slot another replica (or an earlier run) claimed: its round, found by the slot
        elsewhere = [r.model for r in reports if r.round_id is None]
        earlier = (
            wiring.store.live_rounds(elsewhere, slot_of(reports[0].at, settings.interval_minutes))
            if elsewhere
            else {}
        )
    except STORE_ERRORS as exc:
        if not extra:
            ping(settings.heartbeat, True, [], raised=True)
        fail(
            f"the store at {redact_url(settings.database_url)} failed during the round: "
            f"{type(exc).__name__}: {first_line(exc)}",
            code=1,
        )
    finally:
        if tracer is not None:
            tracer.shutdown()  # flushes the round's spans
        wiring.store.dispose()
    _print_reports(reports, earlier, json_output)
    failed = unfinished(reports)
    if not extra:  # an extra round is outside the schedule: the switch expects one per slot
        ping(settings.heartbeat, ran, reports)
    if failed:
        fail("round not done: " + scrub("; ".join(failed)), code=1)


def _open_wiring(settings: Settings) -> Wiring:
    """The probe definitions, then the store, migrated: each failure is one line. The store is
    retried while unreachable, as `canary serve` does, for ``startup_wait_s``: a PostgreSQL
    restart does not cost cron its slot (``CANARY_STARTUP_WAIT_S=0`` fails at once)."""
    from canary.config.probe_set import ProbeDefinitionError, load_probes
    from canary.rounds.wiring import Wiring
    from canary.service.startup import StartupError, open_store

    try:
        probes = load_probes(settings.probes_dir, settings.languages)
    except ProbeDefinitionError as exc:
        fail(f"probe definitions: {exc}", code=1)  # as `canary serve` says it
    try:
        store = open_store(settings, wait=_pause)
    except StartupError as exc:
        fail(str(exc), code=1)
    return Wiring(settings, store, probes)


def _pause(seconds: float) -> bool:
    """Between tries of the store (Ctrl-C ends it). False: keep trying."""
    time.sleep(seconds)
    return False


def _print_reports(
    reports: list[ModelRound], earlier: Mapping[str, RoundRow], json_output: bool
) -> None:
    from canary.rounds.drill import round_events
    from canary.service.daemon import round_summary

    for report in reports:
        if report.round_id is None:
            _print_already_ran(report.model, earlier.get(report.model), json_output)
            continue
        if json_output:
            for line in round_events(1, report):
                print_json(line)
            continue
        summary = round_summary(report)
        verdicts = ", ".join(f"{k} {n}" for k, n in summary["verdicts"].items())
        decided = (
            "an extra round: decides nothing"
            if report.extra
            else f"decisions {', '.join(summary['decisions']) or '-'}"
        )
        typer.echo(
            f"{report.model}: round {report.round_id} {report.status}; "
            f"verdicts {verdicts or '-'}; {decided}; cost ${report.cost_usd:.6f}"
        )


def _print_already_ran(model: str, row: RoundRow | None, json_output: bool) -> None:
    if json_output:
        print_json(
            {
                "event": "already_ran",
                "model": model,
                "round_id": row.id if row else None,
                "scheduled_at": to_second(row.scheduled_at) if row else None,
                "started_at": to_second(row.started_at) if row else None,
                "status": row.status if row else None,
                "runner_id": row.runner_id if row else None,
            }
        )
        return
    if row is None:  # claimed, then gone: only a concurrent prune or a manual edit does that
        typer.echo(f"{model}: this slot's round already ran elsewhere")
        return
    if row.status == "running":
        typer.echo(
            f"{model}: this slot ({to_second(row.scheduled_at)}) is being run by "
            f"{row.runner_id}: round {row.id}, started {to_second(row.started_at)}"
        )
        return
    typer.echo(
        f"{model}: this slot ({to_second(row.scheduled_at)}) already ran: round {row.id}, "
        f"started {to_second(row.started_at)} by {row.runner_id}, {row.status}"
        + (f" at {to_second(row.finished_at)}" if row.finished_at else "")
        + "; the next round runs at the next slot"
    )


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on.")] = 8080,
) -> None:
    from canary.service.daemon import StartupError, run_daemon

    settings = settings_from(ctx)
    require_api_key(settings, "serve")
    try:
        run_daemon(settings, host=host, port=port)
    except StartupError as exc:
        fail(str(exc), code=1)


def drill(
    ctx: typer.Context,
    scenario: Annotated[
        Path, typer.Option(metavar="FILE", help="Scenario YAML file.", exists=True, dir_okay=False)
    ],
    rounds: Annotated[int, typer.Option(min=1, metavar="N", help="How many rounds.")] = 6,
    interval_minutes: Annotated[
        float, typer.Option(metavar="MINUTES", help="Virtual minutes between rounds.")
    ] = 30,
    mode: Annotated[
        str | None, typer.Option(metavar="MODE", help="observe | enforce (default: settings).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
) -> None:
    from canary.rounds.drill import DrillError, run_drill
    from canary.sim.scenario import ScenarioError
    from canary.store.migrate import MigrationsNotFound

    if mode not in (None, "observe", "enforce"):
        fail(f"--mode must be observe or enforce, not {mode!r}")
    settings = settings_from(ctx)

    def emit(line: dict[str, JsonValue]) -> None:
        if json_output:
            print_json(line)
        else:
            typer.echo(_human(line))

    try:
        asyncio.run(
            run_drill(
                scenario,
                rounds,
                settings,
                mode=mode,
                interval_minutes=interval_minutes,
                database_url=env_value(os.environ, "CANARY_DATABASE_URL") or None,
                emit=emit,
            )
        )
    except (ScenarioError, SettingsError, DrillError) as exc:
        fail(str(exc), code=1 if isinstance(exc, DrillError) else 2)
    except ProbeDefinitionError as exc:
        fail(f"probe definitions: {exc}", code=1)  # as `canary serve` says it
    except MigrationsNotFound as exc:
        fail(str(exc).strip("'\""), code=1)


def _human(line: dict[str, JsonValue]) -> str:
    kind = line["event"]
    if kind == "summary":
        return f"summary: ignore lists {line['ignore']}"
    where = f"{line.get('model')} {line.get('provider') or ''}"
    head = f"round {line['round']:>3} {line['at']} {kind:<16} {where}"
    if kind == "verdict":
        contracts = line["contracts"]
        failed = [
            c
            for c, r in (contracts.items() if isinstance(contracts, dict) else ())
            if isinstance(r, dict) and r["result"] == "fail"
        ]
        return f"{head} {line['verdict']}" + (f" ({', '.join(failed)})" if failed else "")
    extras = {
        k: v for k, v in line.items() if k not in ("round", "at", "event", "model", "provider")
    }
    return f"{head} {extras}"
