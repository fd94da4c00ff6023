"""Retention: the evidence older than the window is deleted, in small transactions.

Pruned: probes, contract results and round verdicts (by their round's scheduled time; each
endpoint's latest verdict is pointed again at what is left of its verdicts), equality results
(by their check's slot, as a round's verdicts; they carry example completions), endpoint
snapshots (each model keeps its latest one, the baseline the next round's drift is diffed
against) and the hourly latency histograms. Kept: rounds, equality checks, states,
quarantines, exclusions, maintenance windows, audit and drift rows, which are small and are the
record of what was decided and why.

Each batch is one short transaction, so rounds and reads go on while a large backlog is pruned.
A lease row (``retention``) lets one replica prune at a time; it is kept after the run until it
expires, so across replicas the store is pruned at most once per lease period.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

from sqlalchemy import Column, Connection, Table, delete, func, select

from canary.store import tables as t
from canary.store._audit import AuditMixin
from canary.store._index_walks import distinct_values
from canary.store.latest_verdicts import repoint_after_prune

RETENTION_LEASE = "retention"
ROUNDS_PER_BATCH = 50  # a model's round holds ~7 probes per endpoint: a few thousand rows a batch
SLICE = timedelta(days=1)  # snapshots and histograms are deleted one model-day at a time


@dataclass(frozen=True)
class Pruned:
    """Rows deleted by one pass, per table; ``complete`` is False when it was stopped early."""

    probes: int = 0
    contract_results: int = 0
    round_verdicts: int = 0
    equality_results: int = 0
    endpoint_snapshots: int = 0
    ttft_buckets: int = 0
    latency_figures: int = 0
    error_figures: int = 0
    reports: int = 0
    published_documents: int = 0
    complete: bool = True

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self) if f.name != "complete")


def _never() -> bool:
    return False


class RetentionMixin(AuditMixin):
    def prune_once(
        self,
        holder: str,
        now: datetime,
        *,
        keep_days: int,
        lease_s: float,
        should_stop: Callable[[], bool] = _never,
    ) -> Pruned | None:
        """Prune what is older than ``keep_days`` when this holder can take the retention lease
        (None when another replica holds it, or this one pruned less than ``lease_s`` ago)."""
        lease = self.lease(RETENTION_LEASE)
        if lease is not None and lease.holder == holder and lease.expires_at > now:
            return None  # pruned recently: the lease still marks that run
        if not self.try_acquire_lease(RETENTION_LEASE, holder, now, lease_s):
            return None
        return self.prune_before(now - timedelta(days=keep_days), should_stop=should_stop)

    def prune_before(self, cutoff: datetime, *, should_stop: Callable[[], bool] = _never) -> Pruned:
        """Delete the evidence older than ``cutoff`` (see the module); ``should_stop`` is asked
        between batches, so a shutting-down daemon does not wait for a long backlog."""
        counts: dict[str, int] = {}
        for table in (t.probes, t.contract_results, t.round_verdicts):
            counts[table.name] = self._prune_by_round(table, cutoff, should_stop)
        counts["equality_results"] = self._prune_equality(cutoff, should_stop)
        counts["endpoint_snapshots"] = self._prune_snapshots(cutoff, should_stop)
        counts["ttft_buckets"] = self._prune_histograms(cutoff, should_stop)
        with self._write() as conn:  # a row or two per endpoint: figures of gone endpoints
            for figures in (t.latency_figures, t.error_figures):
                deleted = conn.execute(delete(figures).where(figures.c.at < cutoff))
                counts[figures.name] = deleted.rowcount
            counts["reports"] = conn.execute(
                delete(t.reports).where(t.reports.c.at < cutoff)
            ).rowcount
            d = t.published_documents.c  # each variant's latest stays: what is published now
            latest = select(func.max(d.id)).group_by(d.model, d.variant)
            counts["published_documents"] = conn.execute(
                delete(t.published_documents).where(d.at < cutoff, d.id.not_in(latest))
            ).rowcount
        return Pruned(**counts, complete=not should_stop())

    def _prune_by_round(
        self, table: Table, cutoff: datetime, should_stop: Callable[[], bool]
    ) -> int:
        """The rows of the rounds scheduled before ``cutoff``."""
        return self._prune_under(t.rounds, table, table.c.round_id, cutoff, should_stop)

    def _prune_equality(self, cutoff: datetime, should_stop: Callable[[], bool]) -> int:
        """The results of the equality checks of slots before ``cutoff`` (a check has a row per
        tested endpoint of its model)."""
        results = t.equality_results
        return self._prune_under(
            t.equality_checks, results, results.c.check_id, cutoff, should_stop
        )

    def _prune_under(
        self,
        parent: Table,
        table: Table,
        parent_id: Column[int],
        cutoff: datetime,
        should_stop: Callable[[], bool],
    ) -> int:
        """Walk the ``parent`` rows (rounds or checks) scheduled before ``cutoff`` in id order,
        from the oldest one that still has rows in ``table``, deleting their rows a batch of
        parents at a time (the parents are kept)."""
        p = parent.c
        with self._read() as conn:
            oldest = conn.execute(select(func.min(parent_id))).scalar_one_or_none()
        if oldest is None:
            return 0
        cursor, deleted = oldest - 1, 0
        while not should_stop():
            with self._write() as conn:
                ids = list(
                    conn.execute(
                        select(p.id)
                        .where(p.id > cursor, p.scheduled_at < cutoff)
                        .order_by(p.id)
                        .limit(ROUNDS_PER_BATCH)
                    ).scalars()
                )
                if not ids:
                    break
                deleted += conn.execute(delete(table).where(parent_id.in_(ids))).rowcount
                if table is t.round_verdicts:
                    repoint_after_prune(conn, ids)
            cursor = ids[-1]
        return deleted

    def _prune_snapshots(self, cutoff: datetime, should_stop: Callable[[], bool]) -> int:
        s = t.endpoint_snapshots.c
        with self._read() as conn:
            models = list(conn.execute(distinct_values(t.endpoint_snapshots, "model")).scalars())
        deleted = 0
        for model in models:
            with self._read() as conn:
                oldest, latest = conn.execute(
                    select(func.min(s.at), func.max(s.at)).where(s.model == model)
                ).one()
            if oldest is None or latest is None:
                continue
            # every row of the latest listing stays, however old: the next diff's baseline
            deleted += self._delete_in_slices(
                t.endpoint_snapshots, "at", model, oldest, min(cutoff, latest), should_stop
            )
        return deleted

    def _prune_histograms(self, cutoff: datetime, should_stop: Callable[[], bool]) -> int:
        b = t.ttft_buckets.c
        with self._read() as conn:
            models = list(conn.execute(distinct_values(t.ttft_buckets, "model")).scalars())
        deleted = 0
        for model in models:
            with self._read() as conn:
                oldest = conn.execute(
                    select(func.min(b.hour)).where(b.model == model)
                ).scalar_one_or_none()
            if oldest is not None:
                deleted += self._delete_in_slices(
                    t.ttft_buckets, "hour", model, oldest, cutoff, should_stop
                )
        return deleted

    def _delete_in_slices(
        self,
        table: Table,
        moment: str,
        model: str,
        oldest: datetime,
        bound: datetime,
        should_stop: Callable[[], bool],
    ) -> int:
        """Delete ``model``'s rows whose column ``moment`` is before ``bound``, a day at a time."""
        deleted, edge = 0, oldest
        while edge < bound and not should_stop():
            edge = min(edge + SLICE, bound)
            with self._write() as conn:
                deleted += _delete_older(conn, table, moment, model, edge)
        return deleted


def _delete_older(conn: Connection, table: Table, moment: str, model: str, edge: datetime) -> int:
    stmt = delete(table).where(table.c.model == model, table.c[moment] < edge)
    return int(conn.execute(stmt).rowcount)
