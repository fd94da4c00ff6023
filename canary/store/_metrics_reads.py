"""Reads for ``GET /metrics``: the figures every replica must export alike, from the store.

One read transaction, a few indexed queries per model, so a scrape of 200 models stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, func, select

from canary.core.model import Contract, EventKind
from canary.core.probing import Probing
from canary.core.verdict import CONTROL_MISSING, PROBE_WEAK
from canary.store import tables as t
from canary.store._round_kinds import DECIDING, PROBED
from canary.store.engine import StoreBase

KNOWN_PROBLEMS = frozenset(p.value for p in Probing)
# A refusal result with one of these reasons says the round's refusal probe proved nothing.
WEAK_PROBE_REASONS = (PROBE_WEAK, CONTROL_MISSING)


@dataclass(frozen=True)
class FinishedRound:
    """A model's latest successful round: a scheduled round that finished and whose probes got
    past OpenRouter. Abandoned rounds do not count, nor do extra ones (``canary round --now``:
    they decide nothing, and must not hide that the scheduled rounds stopped), nor those whose
    every probe OpenRouter refused or could not take (``detail.probing``,
    :mod:`canary.core.probing`: a missing key must not look like a working canary)."""

    model: str
    round_id: int
    started_at: datetime
    finished_at: datetime
    cost_usd: float | None

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.finished_at - self.started_at).total_seconds())


@dataclass(frozen=True)
class FleetActivity:
    last_finished: dict[str, FinishedRound]  # by model; absent before its first one
    weak_probe: frozenset[str]  # models whose last finished round had a weak refusal probe
    quarantines_started: dict[str, int]  # by model: every quarantine ever started
    would_quarantines: dict[str, int]  # by model: every would_quarantine audit row (observe)
    failing_deliveries: int  # outbox rows whose delivery was tried, failed, and is still owed


_rounds = t.rounds.c
# walks the (model, scheduled_at) index backwards from the newest round
_LAST_FINISHED = (
    select(_rounds.id, _rounds.started_at, _rounds.finished_at, _rounds.cost_usd)
    .where(
        _rounds.model == bindparam("model"),
        _rounds.status == "finished",
        _rounds.finished_at.is_not(None),
        DECIDING,
        PROBED,
    )
    .order_by(_rounds.scheduled_at.desc())
    .limit(1)
)


class MetricsReadsMixin(StoreBase):
    def fleet_activity(self, models: Sequence[str]) -> FleetActivity:
        """Each model's latest finished round and whether its refusal probe was weak, the
        quarantines started per model and those observe mode would have started (its audit
        rows, kept by retention: the count only grows), and the webhook deliveries that are
        failing."""
        models = list(dict.fromkeys(models))
        c, q, a = t.contract_results.c, t.quarantines.c, t.audit.c
        with self._read() as conn:
            last: dict[str, FinishedRound] = {}
            for model in models:
                row = conn.execute(_LAST_FINISHED, {"model": model}).first()
                if row is not None:
                    last[model] = FinishedRound(
                        model, row.id, row.started_at, row.finished_at, row.cost_usd
                    )
            weak: set[str] = set()
            if last:
                weak.update(
                    conn.execute(
                        select(c.model)
                        .where(
                            c.round_id.in_(sorted(f.round_id for f in last.values())),
                            c.contract == Contract.refusal.value,
                            c.reason.in_(WEAK_PROBE_REASONS),
                        )
                        .distinct()
                    ).scalars()
                )
            started = {
                model: int(n)
                for model, n in conn.execute(
                    select(q.model, func.count()).where(q.model.in_(models)).group_by(q.model)
                )
            }
            would = {
                model: int(n)
                for model, n in conn.execute(
                    select(a.model, func.count())
                    .where(a.model.in_(models), a.event == EventKind.would_quarantine.value)
                    .group_by(a.model)
                )
            }
            failing = conn.execute(
                select(func.count())
                .select_from(t.audit)
                .where(a.notified_at.is_(None), a.notify_attempts > 0)
            ).scalar_one()
        return FleetActivity(
            last_finished=last,
            weak_probe=frozenset(m for m in weak if m in last),
            quarantines_started={m: started.get(m, 0) for m in models},
            would_quarantines={m: would.get(m, 0) for m in models},
            failing_deliveries=int(failing),
        )

    def probing_problems(self, models: Sequence[str], since: datetime) -> dict[str, Probing | None]:
        """Each model's latest ended scheduled round of a slot at or after ``since``: the
        probing problem its detail names (``auth_config``, ``unreachable``), or None. Models
        without such a round are left out. One read of the recent rounds (the scheduled_at
        index), for ``/readyz``."""
        wanted = set(models)
        stmt = (
            select(_rounds.model, _rounds.detail["probing"].as_string())
            .where(_rounds.scheduled_at >= since, _rounds.status != "running", DECIDING)
            .order_by(_rounds.scheduled_at.desc(), _rounds.id.desc())
        )
        latest: dict[str, Probing | None] = {}
        with self._read() as conn:
            for model, problem in conn.execute(stmt):
                if model in wanted and model not in latest:
                    latest[model] = Probing(problem) if problem in KNOWN_PROBLEMS else None
        return latest
