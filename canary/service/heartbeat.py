"""Pings the dead-man's switch (``[heartbeat] url``) after a slot's round: what to say is
:func:`canary.core.heartbeat.heartbeat_signal`'s; this only sends it, and never fails a round.
The URL holds the check's secret: no log line names it."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import httpx

from canary.config.settings import Heartbeat
from canary.core.heartbeat import heartbeat_signal, heartbeat_url
from canary.core.oneshot import RoundEnd
from canary.service.logs import get_logger

log = get_logger("canary.service.heartbeat")


def ping(
    heartbeat: Heartbeat, ran: bool, ends: Iterable[RoundEnd], *, raised: bool = False
) -> None:
    """Send this run's signal, if any, and wait for the answer (at most ``timeout_s``)."""
    base = heartbeat.url.get_secret_value()
    signal = heartbeat_signal(ran, ends, raised=raised)
    if not base or signal is None:
        return
    try:
        response = httpx.post(heartbeat_url(base, signal), timeout=heartbeat.timeout_s)
    except httpx.HTTPError as exc:
        log.warning("heartbeat_failed", signal=signal, error=type(exc).__name__)
        return
    if response.is_success:
        log.info("heartbeat_sent", signal=signal)
    else:
        log.warning("heartbeat_failed", signal=signal, status=response.status_code)


def ping_in_background(
    heartbeat: Heartbeat, ran: bool, ends: Iterable[RoundEnd], *, raised: bool = False
) -> threading.Thread:
    """:func:`ping` on a thread of its own, so a slow check never holds up the next round."""
    thread = threading.Thread(
        target=ping,
        args=(heartbeat, ran, tuple(ends)),
        kwargs={"raised": raised},
        name="heartbeat",
        daemon=True,
    )
    thread.start()
    return thread
