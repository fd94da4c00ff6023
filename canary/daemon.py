"""`canary serve`: migrations, the scheduler, the ignore-list cache, notifications and the API."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from canary.logs import get_logger
from canary.settings import Settings, redact_url

log = get_logger("canary.daemon")


class Daemon:
    """The long-lived pieces, and the two jobs the scheduler runs."""

    def __init__(self, settings: Settings, *, holder: str | None = None) -> None:
        from canary.ignorelist import IgnoreListService
        from canary.notify import Notifier
        from canary.runner import runner_id
        from canary.wiring import build_wiring

        self.settings = settings
        self.wiring = build_wiring(settings)
        self.holder = holder or runner_id()
        self.ignore = IgnoreListService(
            self.wiring.store,
            self.wiring.probes.builtin_exclusions,
            lambda: self.settings.model_ids,
            self.wiring.policy_version,
            lambda: datetime.now(UTC),
            floor_of=lambda model: self.settings.model(model).capacity_floor,
        )
        self.notifier = Notifier(self.wiring.store, settings.webhooks)
        self.ignore.refresh()

    def run_round(self) -> None:
        from canary.runner import RoundRunner
        from canary.scheduler import under_round_lease
        from canary.wiring import openrouter_client

        async def work() -> Any:
            async with openrouter_client(self.settings) as client:
                return await RoundRunner(self.wiring, client, holder=self.holder).run()

        try:
            ran, _ = asyncio.run(
                under_round_lease(
                    self.wiring.store,
                    self.holder,
                    work,
                    ttl_s=self.settings.lease_ttl_s,
                    renew_every_s=lease_renew_s(self.settings),
                )
            )
            log.info("round_done" if ran else "round_skipped", holder=self.holder)
        except Exception as exc:  # a failed round must never stop the daemon
            log.error("round_error", error=repr(exc))
        self.housekeeping()

    def housekeeping(self) -> None:
        self.keep_decisions(datetime.now(UTC))
        try:
            self.ignore.refresh()
        except Exception as exc:
            log.warning("ignore_list_refresh_failed", error=repr(exc))
        try:
            self.notifier.send_pending()
        except Exception as exc:
            log.warning("notify_failed", error=repr(exc))

    def keep_decisions(self, now: datetime) -> None:
        """Between rounds: release quarantines whose end has come (their notifications go out
        now, not at the next round) and record what the floor does on the published lists."""
        from canary.store.engine import STORE_ERRORS

        decisions = self.wiring.decisions
        models = list(self.settings.model_ids)
        try:
            for model in models:
                decisions.expire_due(model, now)
            decisions.sync_floor(
                models, {m: self.settings.model(m).capacity_floor for m in models}, now
            )
        except STORE_ERRORS as exc:
            log.warning("housekeeping_store_unavailable", error=type(exc).__name__)


def lease_renew_s(settings: Settings) -> float:
    """How often the round lease is renewed: as configured, but at least three times per TTL."""
    return min(settings.lease_renew_s, settings.lease_ttl_s / 3)


def run_daemon(settings: Settings, *, host: str, port: int) -> None:
    import uvicorn

    from canary.api.app import create_app
    from canary.scheduler import build_scheduler

    log.info(
        "starting",
        database=redact_url(settings.database_url),
        mode=settings.mode,
        models=list(settings.model_ids),
        interval_minutes=settings.interval_minutes,
    )
    daemon = Daemon(settings)
    # Load the language models before the first round: a round must not stall on them.
    daemon.wiring.analyzer.warm()
    app = create_app(settings, daemon.wiring.store, daemon.ignore)
    scheduler = build_scheduler(settings.interval_minutes, daemon.run_round, daemon.housekeeping)
    scheduler.start()
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        scheduler.shutdown(wait=False)
        daemon.wiring.store.dispose()
