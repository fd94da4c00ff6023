"""`canary serve`: migrations, the scheduler, the ignore-list cache, notifications and the API.

Start-up, in this order: the listening socket is bound (a taken port fails here, before any
round could start), the store is opened and migrated (retried with exponential backoff for
``startup_wait_s``; both in :mod:`canary.service.startup`), the probe definitions and language models are
loaded, the API starts serving, and only then the scheduler. Every start-up failure is one
:class:`StartupError` line.

Shutdown, on SIGTERM or SIGINT: scheduling stops, a running round gets ``shutdown_grace_s`` to
finish, else it is cancelled and recorded abandoned (a model's round that already decided is
``finished`` by its decision's own transaction and stays so; one that had not decided leaves
nothing that counts, and another replica runs it in the same slot), the round lease is released
at once (so any replica runs the next slot as usual), the API stops, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any, NotRequired, TypedDict

import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from canary.api.app import create_app
from canary.config.probe_set import ProbeDefinitionError
from canary.config.settings import Settings, redact_url
from canary.core.model import iso_utc
from canary.core.plan import overrun_slot, slot_of
from canary.rounds.aio import run as run_to_completion
from canary.rounds.deciding import DecisionConflict, ModelDecisions
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner, runner_id
from canary.rounds.scheduler import ROUND_LEASE, build_scheduler, round_turn
from canary.rounds.wiring import build_wiring, openrouter_client
from canary.service.heartbeat import ping_in_background
from canary.service.ignore_list import IgnoreListService
from canary.service.logs import get_logger
from canary.service.notify import Notifier
from canary.service.startup import StartupError, listen, open_store
from canary.store.engine import STORE_ERRORS
from canary.store.repository import Store
from canary.tracing import TracingUnavailable

__all__ = [
    "HOUSEKEEPING_EVERY_S",
    "Daemon",
    "StartupError",
    "keep_decisions",
    "lease_renew_s",
    "round_summary",
    "run_daemon",
]


log = get_logger("canary.service.daemon")

HOUSEKEEPING_EVERY_S = 15.0  # the list rebuilt from the store, due releases, notifications
FOCUSED_EVERY_S = 15.0  # pending reports picked up: a focused check starts within a minute
RETENTION_EVERY_S = 3600.0  # the store is pruned at most this often, by one replica at a time
RETENTION_FIRST_AFTER_S = 60.0  # the first pass, after start-up has settled
UNWIND_S = 10.0  # how long a cancelled round may take to unwind (close streams, free the lease)
SERVER_START_S = 30.0


@dataclass(frozen=True)
class RunningRound:
    loop: asyncio.AbstractEventLoop
    task: asyncio.Task[Any]


class Daemon:
    """The long-lived pieces, and the jobs the scheduler runs."""

    def __init__(
        self, settings: Settings, *, store: Store | None = None, holder: str | None = None
    ) -> None:
        self.settings = settings
        self.wiring = build_wiring(settings, store=store, upgrade=store is None)
        self.holder = holder or runner_id()
        self.ignore = IgnoreListService(
            self.wiring.store,
            self.wiring.probes.builtin_exclusions,
            lambda: self.settings.model_ids,
            self.wiring.policy_version,
            lambda: datetime.now(UTC),
            floor_of=lambda model: self.settings.model(model).capacity_floor,
            controls_of=lambda model: self.settings.model(model).controls,
            profiles=settings.profile_rules,
            record=self.wiring.store.record_documents,
        )
        self.notifier = Notifier(self.wiring.store, settings.webhooks, settings.notifiers)
        self.stopping = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._running: RunningRound | None = None
        self._running_lock = threading.Lock()
        self.ignore.refresh()

    # -- the round ----------------------------------------------------------------------------

    def run_round(self) -> None:
        """The scheduler's round job: a round of the current slot, then housekeeping; again, at
        once, while a slot began meanwhile (:func:`~canary.core.plan.overrun_slot`: the scheduler
        skipped its start, this job still running)."""
        while not self.stopping.is_set():
            ran = self._one_round()
            if not self.stopping.is_set():
                self.housekeeping()
            if ran is None:
                return
            late = overrun_slot(ran, datetime.now(UTC), self.settings.interval_minutes)
            if late is None:
                return
            log.info(
                "round_catching_up",
                holder=self.holder,
                slot=iso_utc(late),
                after_slot=iso_utc(ran),
            )

    def _one_round(self) -> datetime | None:
        """One round of the current slot; returns that slot when this replica ran its turn."""
        self._idle.clear()
        started = time.monotonic()
        try:
            ran, reports, slot = run_to_completion(self._round())
            if ran or not self.stopping.is_set():
                self._log_round(ran, reports or [], time.monotonic() - started)
                ping_in_background(self.settings.heartbeat, ran, reports or [])
            return slot if ran else None
        except asyncio.CancelledError:
            log.warning("round_cancelled", holder=self.holder)
        except Exception as exc:  # a failed round must never stop the daemon
            log.error("round_error", error=repr(exc))
            ping_in_background(self.settings.heartbeat, True, [], raised=True)
        finally:
            with self._running_lock:
                self._running = None
            self._idle.set()
        return None

    async def _round(self) -> tuple[bool, list[ModelRound] | None, datetime]:
        current = asyncio.current_task()
        assert current is not None
        slot = slot_of(datetime.now(UTC), self.settings.interval_minutes)
        with self._running_lock:
            self._running = RunningRound(asyncio.get_running_loop(), current)
        if self.stopping.is_set():  # the stop came between the scheduler's call and here
            return False, None, slot

        async def work() -> list[ModelRound]:
            async with openrouter_client(self.settings) as client:
                runner = RoundRunner(self.wiring, client, holder=self.holder)
                return await runner.run(scheduled_at=slot)

        ran, reports = await round_turn(
            self.wiring.store,
            self.holder,
            work,
            ttl_s=self.settings.lease_ttl_s,
            renew_every_s=lease_renew_s(self.settings),
        )
        return ran, reports, slot

    def run_equality(self) -> None:
        """The scheduler's equality job: the due models' checks of the current slot, one model
        at a time so that a stop is seen between them (canary.rounds.equality)."""
        from canary.rounds.equality import run_due

        try:
            run_to_completion(run_due(self.wiring, self.holder, self.stopping.is_set))
        except Exception as exc:  # an advisory check must never stop the daemon
            log.error("equality_error", error=repr(exc))

    def _log_round(self, ran: bool, reports: list[ModelRound], duration_s: float) -> None:
        if not ran:
            log.info("round_skipped", holder=self.holder, why="another replica holds the lease")
            return
        ours = [r for r in reports if r.round_id is not None]
        if not ours:
            log.info("round_skipped", holder=self.holder, why="this slot already ran elsewhere")
        for report in ours:
            log.info("round_done", **round_summary(report), run_s=round(duration_s, 3))

    def stop_round(self, grace_s: float) -> int:
        """Give a running round ``grace_s`` to finish, else cancel it; record what it left
        running as abandoned and free the round lease. Returns how many rounds were abandoned."""
        if not self._idle.wait(grace_s):
            with self._running_lock:
                running = self._running
            if running is not None:
                log.warning("round_cancelling", holder=self.holder, grace_s=grace_s)
                running.loop.call_soon_threadsafe(running.task.cancel)
            if not self._idle.wait(UNWIND_S):
                log.error("round_did_not_unwind", holder=self.holder, waited_s=UNWIND_S)
        store = self.wiring.store
        try:
            abandoned = store.abandon_rounds_of(self.holder, datetime.now(UTC), why="shutdown")
            store.release_lease(ROUND_LEASE, self.holder)
        except SQLAlchemyError as exc:  # the store is down: the lease expires, the round goes stale
            log.error("shutdown_store_unreachable", holder=self.holder, error=repr(exc))
            return 0
        if abandoned:
            log.warning("round_abandoned", holder=self.holder, count=abandoned, why="shutdown")
        return abandoned

    @property
    def round_unwound(self) -> bool:
        return self._idle.is_set()

    def focused_checks(self) -> None:
        """The focused-check job: the pending reports' checks and the second looks due
        (:class:`canary.rounds.focused.FocusedChecks`); the list republished after a decision."""
        from sqlalchemy.exc import SQLAlchemyError

        from canary.rounds.focused import FocusedChecks
        from canary.rounds.wiring import openrouter_client

        async def work() -> bool:
            async with openrouter_client(self.settings) as client:
                checks = FocusedChecks(self.wiring, client, holder=self.holder)
                return any(c.decided for c in await checks.tick())

        try:
            if run_to_completion(work()):
                self.ignore.refresh()
        except SQLAlchemyError as exc:  # the store blinked: the next tick tries again
            log.warning("focused_checks_failed", error=repr(exc))

    # -- housekeeping -------------------------------------------------------------------------

    def housekeeping(self) -> None:
        self.keep_decisions(datetime.now(UTC))
        try:
            self.ignore.refresh()
        except SQLAlchemyError as exc:
            log.warning("ignore_list_refresh_failed", error=repr(exc))
        try:
            self.notifier.send_pending()
        except SQLAlchemyError as exc:
            log.warning("notify_failed", error=repr(exc))

    def keep_decisions(self, now: datetime) -> None:
        keep_decisions(self.wiring.decisions, self.settings, now)

    def prune_evidence(self) -> None:
        """Retention: delete evidence older than ``retention_days`` (one replica at a time)."""
        started = time.monotonic()
        try:
            pruned = self.wiring.store.prune_once(
                self.holder,
                datetime.now(UTC),
                keep_days=self.settings.retention_days,
                lease_s=RETENTION_EVERY_S,
                should_stop=self.stopping.is_set,
            )
        except SQLAlchemyError as exc:
            log.warning("retention_failed", error=repr(exc))
            return
        if pruned is not None:
            log.info(
                "retention_pruned",
                keep_days=self.settings.retention_days,
                rows=pruned.total,
                **asdict(pruned),
                duration_s=round(time.monotonic() - started, 3),
            )


def keep_decisions(decisions: ModelDecisions, settings: Settings, now: datetime) -> None:
    """Between rounds: release quarantines whose end has come (their notifications go out now,
    not at the next round) and record what the floor does on the published lists. A store
    error is logged: the next tick tries again. One read of every model's states finds the
    models with something due (usually none); each of those is read and decided again."""
    models = list(settings.model_ids)
    try:
        due = decisions.due_to_expire(models, now)
    except STORE_ERRORS as exc:
        log.warning("housekeeping_store_unavailable", error=type(exc).__name__)
        due = []
    for model in due:  # one model's trouble must not hold back the others' releases
        try:
            decisions.expire_due(model, now)
        except DecisionConflict as exc:  # kept changing under it: the next tick tries again
            log.warning("housekeeping_conflict", model=model, error=str(exc))
        except STORE_ERRORS as exc:
            log.warning("housekeeping_store_unavailable", model=model, error=type(exc).__name__)
    try:
        decisions.sync_floor(models, {m: settings.model(m).capacity_floor for m in models}, now)
    except STORE_ERRORS as exc:
        log.warning("housekeeping_store_unavailable", error=type(exc).__name__)


class RoundSummary(TypedDict):
    model: str
    round_id: int | None
    status: str
    verdicts: dict[str, int]
    decisions: list[str]
    cost_usd: float
    duration_s: float | None
    error: NotRequired[str]
    probing: NotRequired[str]  # every probe stopped at OpenRouter: not a successful round


def round_summary(report: ModelRound) -> RoundSummary:
    """One model's round in a line: verdict counts, decisions, cost."""
    counts: dict[str, int] = {}
    for verdict in report.verdicts.values():
        counts[verdict.verdict.value] = counts.get(verdict.verdict.value, 0) + 1
    summary: RoundSummary = {
        "model": report.model,
        "round_id": report.round_id,
        "status": report.status,
        "verdicts": dict(sorted(counts.items())),
        "decisions": [e.kind.value for e in report.events if e.kind.value != "verdict"],
        "cost_usd": round(report.cost_usd, 6),
        "duration_s": None if report.duration_s is None else round(report.duration_s, 3),
    }
    if report.error is not None:
        summary["error"] = report.error
    if report.stopped is not None:
        summary["probing"] = report.stopped.problem.value
    return summary


def lease_renew_s(settings: Settings) -> float:
    """How often the round lease is renewed: as configured, but at least three times per TTL."""
    return min(settings.lease_renew_s, settings.lease_ttl_s / 3)


# -- the process --------------------------------------------------------------------------------


def run_daemon(settings: Settings, *, host: str, port: int) -> None:
    """Run until SIGTERM/SIGINT; raises :class:`StartupError` when it cannot start."""
    stop = threading.Event()
    _on_stop_signals(stop)
    listener = listen(host, port)
    try:
        _serve(settings, listener, host, port, stop)
    finally:
        listener.close()


def _serve(
    settings: Settings, listener: socket.socket, host: str, port: int, stop: threading.Event
) -> None:
    log.info(
        "starting",
        database=redact_url(settings.database_url),
        mode=settings.mode,
        models=list(settings.model_ids),
        interval_minutes=settings.interval_minutes,
    )
    store = open_store(settings, wait=stop.wait)
    try:
        try:
            daemon = Daemon(settings, store=store)
            tracer = daemon.wiring.tracer  # configured traces without their packages: stop now
        except ProbeDefinitionError as exc:
            raise StartupError(f"probe definitions: {exc}") from None
        except TracingUnavailable as exc:
            raise StartupError(str(exc)) from None
        # Load the language models before the first round: a round must not stall on them.
        daemon.wiring.analyzer.warm()
        app = create_app(settings, daemon.wiring.store, daemon.ignore)
        server = uvicorn.Server(  # log_config=None: its records go out through canary's logging
            uvicorn.Config(
                app,
                log_config=None,
                log_level="warning",
                access_log=False,
                timeout_graceful_shutdown=5,
            )
        )
        # Not the main thread: uvicorn then leaves the signals to us.
        api = threading.Thread(
            target=server.run, kwargs={"sockets": [listener]}, name="canary-api", daemon=True
        )
        api.start()
        _wait_until_serving(server, api, stop)
        if not stop.is_set():
            log.info("listening", url=f"http://{_url_host(host)}:{port}/")
            _schedule_until_stopped(daemon, settings, stop)
        server.should_exit = True
        api.join(timeout=10)
        if tracer is not None:
            tracer.shutdown()  # flushes the spans still queued
        log.info("stopped", holder=daemon.holder)
        if not daemon.round_unwound:
            _exit_now()  # a stuck round thread would keep the interpreter from exiting
    finally:
        store.dispose()


def _schedule_until_stopped(daemon: Daemon, settings: Settings, stop: threading.Event) -> None:
    scheduler = build_scheduler(
        settings.interval_minutes,
        daemon.run_round,
        daemon.housekeeping,
        housekeeping_every_s=HOUSEKEEPING_EVERY_S,
        retention=daemon.prune_evidence,
        retention_every_s=RETENTION_EVERY_S,
        retention_first_after_s=RETENTION_FIRST_AFTER_S,
        equality=daemon.run_equality if settings.equality.enabled else None,
    )
    from apscheduler.triggers.interval import IntervalTrigger

    scheduler.add_job(
        daemon.focused_checks,
        IntervalTrigger(seconds=FOCUSED_EVERY_S, timezone=UTC),
        id="focused",
        max_instances=1,
        coalesce=True,
    )
    scheduler.start()
    stop.wait()
    log.info("stopping", holder=daemon.holder, grace_s=settings.shutdown_grace_s)
    daemon.stopping.set()
    scheduler.shutdown(wait=False)
    daemon.stop_round(settings.shutdown_grace_s)


def _wait_until_serving(
    server: uvicorn.Server, api: threading.Thread, stop: threading.Event
) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while not server.started:
        if not api.is_alive():
            raise StartupError("the HTTP server stopped during start-up (see the log above)")
        if time.monotonic() > deadline:
            raise StartupError(f"the HTTP server did not start within {SERVER_START_S:g} s")
        if stop.wait(0.05):
            return


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _on_stop_signals(stop: threading.Event) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        if not stop.is_set():
            log.info("signal", signal=signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)


def _exit_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
