"""`canary demo`: the showcase scenario, real rounds on an accelerated clock, the API and status page.

The rounds are dated so that the last one runs now (in the current slot): the store it leaves
reads true on the real clock afterwards. Once the rounds are over the demo serves on as the daemon
does, on the real clock, following its store whoever writes it: every
:data:`~canary.service.daemon.HOUSEKEEPING_EVERY_S` it releases what has ended and rebuilds the list, so
an exclusion added with ``canary --config <its folder>/canary.toml exclude add ...`` reaches its
``/v1/ignore-list``. The store is kept in a folder of its own, beside a small settings file, so
the operator commands can be pointed at it during the demo and after it.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from pydantic import JsonValue

from canary.api.app import create_app
from canary.api.page_data import next_slot
from canary.config.settings import ModelSettings, Settings
from canary.core.events import (
    FloorHeld,
    ModelWide,
    ProbeWeak,
    QuarantineStarted,
    QuarantineWithheld,
    Released,
    WouldQuarantine,
)
from canary.core.model import Verdict, iso_utc
from canary.core.plan import slot_of
from canary.openrouter.client import OpenRouterClient
from canary.rounds.drill import SIM_KEY, drill_settings
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import Wiring, build_wiring
from canary.service.daemon import HOUSEKEEPING_EVERY_S, keep_decisions
from canary.service.ignore_list import IgnoreListService, utc_now
from canary.service.ports import free_port
from canary.sim.scenario import load_scenario
from canary.sim.server import start_simulator

SHOWCASE = Path(__file__).parents[1] / "sim" / "scenarios" / "showcase.yaml"
CONTROL_HOST = "filterhost"
# what the operator commands pointed at the demo's folder need (secrets and the simulator's URL
# are left out)
TOP_SETTINGS = {
    "database_url", "mode", "interval_minutes", "ttft_threshold_s", "ttft_samples", "languages",
    "daily_budget_usd", "probes_dir",
}  # fmt: skip
OPENROUTER_SETTINGS = {
    "connect_timeout_s", "first_token_timeout_s", "stream_timeout_s", "listing_deadline_s",
    "max_tokens",
}  # fmt: skip


class VirtualClock:
    """Demo time: starts in the past and jumps one interval per round, so quarantines show real
    dates; once the rounds are over it follows the real clock (:meth:`follow`), so what the demo
    serves afterwards ages as it should."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._real: Callable[[], datetime] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now, real = self._now, self._real
        return now if real is None else max(now, real())

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def follow(self, real: Callable[[], datetime]) -> None:
        """From now on, the real clock (never earlier than the virtual time reached)."""
        with self._lock:
            self._real = real

    @property
    def following(self) -> bool:
        return self._real is not None


def _serve_api(app: FastAPI, port: int) -> tuple[uvicorn.Server, threading.Thread]:
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="canary-demo-api", daemon=True)
    thread.start()
    return server, thread


def demo_folder(explicit: Path | None) -> Path:
    """Where the demo keeps its store and settings: ``explicit``, else a new temporary folder
    (not deleted at the end: that is the point)."""
    if explicit is None:
        return Path(tempfile.mkdtemp(prefix="canary-demo-"))
    explicit.mkdir(parents=True, exist_ok=True)
    return explicit.resolve()


def write_settings(folder: Path, settings: Settings) -> Path:
    """A settings file for the operator commands: the demo's store, mode, models and every
    setting that enters the policy version, written as the demo holds them, so that the commands
    pointed at it compute the policy version the demo's rounds recorded. (A default left out
    would come back as the settings' literal, ``10`` where the demo holds ``10.0``, and hash
    differently; a value the demo took from the environment would not come back at all.)"""
    path = folder / "canary.toml"
    top = settings.model_dump(mode="json", include=TOP_SETTINGS)
    openrouter = settings.openrouter.model_dump(mode="json", include=OPENROUTER_SETTINGS)
    lines = [*_toml_lines(top), "", "[openrouter]", *_toml_lines(openrouter)]
    lines += ["", "[policy]", *_toml_lines(settings.policy.model_dump(mode="json"))]
    for model in settings.models:
        lines += ["", "[[models]]", *_toml_lines(model.model_dump(mode="json"))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _toml_lines(table: Mapping[str, JsonValue]) -> list[str]:
    """``key = value`` lines; None is left out (the setting's default). JSON spells strings,
    numbers (a float keeps its point), booleans and lists as TOML does."""
    return [f"{key} = {_toml_value(value)}" for key, value in table.items() if value is not None]


def _toml_value(value: JsonValue) -> str:
    if isinstance(value, dict):
        items = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return "{" + items + "}"
    return json.dumps(value)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a supervisor, ``timeout``) ends the demo as Ctrl-C does: the running
    task is cancelled, the demo's own clean-up runs, and KeyboardInterrupt reaches the caller,
    which says where the store stays. Only in the main thread, where signals arrive."""
    task = asyncio.current_task()
    if task is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        yield
    except asyncio.CancelledError:
        if terminated:
            raise KeyboardInterrupt from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


async def run_demo(
    base: Settings,
    *,
    rounds: int,
    port: int,
    say: Callable[[str], None],
    folder: Path,
    pause_s: float = 1.0,
    keep_serving: bool = False,
    scenario: Path = SHOWCASE,
    real_clock: Callable[[], datetime] = utc_now,
    refresh_every_s: float = HOUSEKEEPING_EVERY_S,
) -> dict[str, list[str]]:
    """Run the showcase's rounds, telling what happens; then, with ``keep_serving``, serve the
    API and status page until cancelled (Ctrl-C or SIGTERM: both raise KeyboardInterrupt),
    following the store on ``real_clock`` every ``refresh_every_s``."""
    loaded = load_scenario(scenario)
    model_ids = [m.id for m in loaded.models]
    base = base.replace(
        # Portuguese, the language of the real case: one host mixes Spanish into it.
        languages=("pt",),
        models=tuple(
            ModelSettings(id=m, positive_controls=(CONTROL_HOST,), capacity_floor=2)
            for m in model_ids
        ),
    )
    step = timedelta(minutes=base.interval_minutes)
    clock = VirtualClock(real_clock() - (rounds - 1) * step)
    lists: dict[str, list[str]] = {}
    store_url = f"sqlite:///{folder / 'canary.db'}"
    with _sigterm_as_interrupt(), start_simulator(loaded, detector=False) as sim:
        settings = drill_settings(
            base,
            model_ids,
            base_url=sim.base_url,
            database_url=store_url,
            mode="enforce",
            interval_minutes=None,
        )
        config = write_settings(folder, settings)
        wiring = build_wiring(settings)
        ignore = IgnoreListService(
            wiring.store,
            wiring.probes.builtin_exclusions,
            model_ids,
            wiring.policy_version,
            clock,
            floor_of=lambda model: settings.model(model).capacity_floor,
            controls_of=lambda model: settings.model(model).controls,
            profiles=settings.profile_rules,
        )
        ignore.refresh()
        asked, port = port, free_port(port)
        next_round = next_slot(settings)
        app = create_app(
            settings,
            wiring.store,
            ignore,
            clock=clock,
            # once its rounds are over, the demo schedules none
            next_round=lambda now: None if clock.following else next_round(now),
        )
        server, thread = _serve_api(app, port)
        if asked and port != asked:
            say(f"port {asked} is taken: serving on {port} instead (choose one with --port)")
        say(
            f"simulator with {sum(len(m.providers) for m in loaded.models)} providers at {sim.base_url}"
        )
        say(
            f"status page  http://127.0.0.1:{port}/   ignore list  "
            f"http://127.0.0.1:{port}/v1/ignore-list?model={model_ids[0]}"
        )
        say(
            f"mode enforce; one round every {settings.interval_minutes:g} virtual minutes; "
            f"positive control: {CONTROL_HOST}"
        )
        try:
            async with OpenRouterClient(settings.openrouter.base_url, SIM_KEY) as client:
                for k in range(1, rounds + 1):
                    if k > 1:
                        clock.advance(timedelta(minutes=settings.interval_minutes))
                        await asyncio.sleep(pause_s)
                    now = clock()
                    say(
                        f"\nround {k}/{rounds} at {iso_utc(now)}: probing every provider, pinned, no fallback"
                    )
                    reports = await RoundRunner(wiring, client, clock=clock).run(
                        scheduled_at=slot_of(now, settings.interval_minutes)
                    )
                    for report in reports:
                        _tell(report, say)
                    ignore.refresh()
                    for model in model_ids:
                        document = ignore.document(model)[0]
                        lists[model] = document["ignore"]
                        shown = (
                            json.dumps(lists[model])
                            if lists[model]
                            else "[] (nothing excluded yet)"
                        )
                        controls = [
                            e["provider"] for e in document["entries"] if e["layer"] == "control"
                        ]
                        if controls:
                            shown += f" ({', '.join(controls)}: positive control, known to filter)"
                        say(f"  published ignore list for {model}: {shown}")
            clock.follow(real_clock)
            say(
                f"\ndone after {rounds} rounds. Apps put this into provider.ignore: "
                f"{json.dumps(lists)}"
            )
            canary = canary_command()
            say(f"the store is kept in {folder}; inspect it afterwards with:")
            say(f"  {canary} --config {shlex.quote(str(config))} status")
            if keep_serving:
                say(
                    f"\nserving the status page at http://127.0.0.1:{port}/ until Ctrl-C "
                    "(--exit ends the demo after its rounds); it follows the store: try "
                    f"`{canary} --config {shlex.quote(str(config))} exclude add -m {model_ids[0]} -p PROVIDER "
                    "-r REASON`"
                )
                while True:  # like the daemon's housekeeping, without rounds or webhooks
                    await asyncio.sleep(refresh_every_s)
                    await asyncio.to_thread(_follow_store, wiring, settings, ignore, clock())
        finally:
            server.should_exit = True
            thread.join(timeout=5)
            wiring.store.dispose()
    return lists


def canary_command() -> str:
    """How a shell runs this canary: ``canary`` when that is the one on PATH, else its full path
    (a virtual environment not activated), else ``python -m canary``."""
    here = Path(sys.executable).parent / "canary"
    on_path = shutil.which("canary")
    if on_path is not None and here.exists() and Path(on_path).resolve() == here.resolve():
        return "canary"
    if here.exists():
        return shlex.quote(str(here))
    return f"{shlex.quote(sys.executable)} -m canary"


def _follow_store(
    wiring: Wiring, settings: Settings, ignore: IgnoreListService, now: datetime
) -> None:
    """What the daemon's housekeeping does between rounds, but the webhooks: release what has
    ended, record what the floor does, and rebuild the list from the store (which the operator
    commands may have written)."""
    keep_decisions(wiring.decisions, settings, now)
    ignore.refresh()  # a store error keeps the last good list, marked stale


def _tell(report: ModelRound, say: Callable[[str], None]) -> None:
    marks = {
        Verdict.passed: "ok  ",
        Verdict.fail: "FAIL",
        Verdict.inconclusive: "??  ",
        Verdict.transport_error: "net ",
        Verdict.skipped: "skip",
    }
    for tag, verdict in sorted(report.verdicts.items()):
        failed = [r for r in verdict.results if r.result.value == "fail"]
        why = "; ".join(
            r.detail
            if r.detail.startswith(f"{r.contract.value}:")
            else f"{r.contract.value}: {r.detail}"
            for r in failed
        )
        weak = [r for r in verdict.results if r.reason in ("probe_weak", "positive_control")]
        note = f"  ({(weak[0].reason or '').replace('_', ' ')})" if weak and not failed else ""
        say(f"  {marks[verdict.verdict]} {tag:<14} {why}{note}")
    for event in report.events:
        if isinstance(event, QuarantineStarted):
            say(f"  >> QUARANTINE {event.tag} until {iso_utc(event.until)} (step {event.step})")
        elif isinstance(event, Released):
            say(f"  >> release {event.tag} ({event.why})")
        elif isinstance(
            event, WouldQuarantine | FloorHeld | QuarantineWithheld | ModelWide | ProbeWeak
        ):
            say(f"  >> {event.kind.value} {event.tag or ''} {event.detail}")
