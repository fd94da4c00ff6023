"""What a slot's round tells the dead-man's switch. Pure.

The switch hears "success" when the run did its job (what makes `canary round` exit 0: every
model's round finished here without error and got past OpenRouter, or ran elsewhere), "fail" when
a round was abandoned, lost, failed after its decision or never got past OpenRouter (a key, an
outage of OpenRouter itself). One provider's outage is no failure of canary's: its round finishes.
A replica that ran no round (another one held the lease) says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from canary.core.oneshot import RoundEnd, unfinished

Signal = Literal["success", "fail"]


def heartbeat_signal(ran: bool, ends: Iterable[RoundEnd], *, raised: bool = False) -> Signal | None:
    """``raised``: the run itself failed (the store went away mid-round, a bug) before it could
    report its rounds' ends."""
    if raised:
        return "fail"
    if not ran:
        return None
    return "fail" if unfinished(ends) else "success"


def heartbeat_url(base: str, signal: Signal) -> str:
    """The check's URL for ``signal``: as configured, or with ``/fail`` appended."""
    return base if signal == "success" else base.rstrip("/") + "/fail"
