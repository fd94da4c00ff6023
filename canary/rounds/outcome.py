"""What one model's round did: the runner's report, read by the drill, the demo, the logs, the
traces and `canary round`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from canary.core.events import Event
from canary.core.model import RoundVerdict
from canary.core.probing import Stopped
from canary.rounds.prober import EndpointProbing


@dataclass
class ModelRound:
    """What one model's round did, for the drill, the demo and the logs."""

    model: str
    round_id: int | None
    at: datetime
    status: str = "finished"
    verdicts: dict[str, RoundVerdict] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    cost_usd: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    probings: list[EndpointProbing] = field(default_factory=list)
    decided: bool = False  # the decision (states, quarantines, audit rows) was committed
    extra: bool = False  # an extra round (``canary round --now``): it decides nothing
    served: dict[str, str] = field(default_factory=dict)  # tag -> the model its answers reported
    served_before: dict[str, str] = field(default_factory=dict)  # the same, before this round
    error: str | None = None  # why the round failed, when it did
    # a low-cardinality code of why: an exception's class name, "lost", "listing_<transport>"
    error_type: str | None = None
    duration_s: float | None = None  # this model's round, from its claim to its end
    # every probe (or the listing) stopped at OpenRouter itself: not a successful round
    stopped: Stopped | None = None
