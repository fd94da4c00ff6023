"""Rounds (claimed once, finished or abandoned) and their evidence: probes, results, verdicts.

A round ends once: ``running`` becomes ``finished`` (in its decision's transaction, or at the end
of a round that decides nothing) or ``abandoned``, and never changes again. Its probes join the
latency histograms (``ttft_buckets``) in the transaction that finishes it, so an abandoned
attempt's probes are never counted there; the reads that feed decisions and operators leave
abandoned attempts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import JsonValue
from sqlalchemy import Connection, RowMapping, delete, func, insert, or_, select, update

from canary.core.model import Contract, ContractResult, Observation, Result, RoundVerdict, Verdict
from canary.store import tables as t
from canary.store._audit_rows import AuditRows, write_audit
from canary.store._claims import RoundLost, require_held
from canary.store._decode import round_row
from canary.store._round_kinds import DECIDING, abandoned_detail
from canary.store.engine import StoreBase
from canary.store.latency import count_latency
from canary.store.latest_verdicts import raise_latest_verdicts
from canary.store.log_rows import ProbeRow
from canary.store.rows import RoundRow, SkippedEndpoint, UnknownRound

SAMPLE_CHARS = 200
ROUND_STATUSES = ("running", "finished", "abandoned")
SERVED_LOOKBACK = 5_000  # verdict rows read to find each endpoint's last served model


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _contract_result(row: RowMapping) -> ContractResult:
    return ContractResult(
        contract=Contract(row["contract"]),
        result=Result(row["result"]),
        detail=row["detail"],
        figure=row["figure"],
        sample=row["sample"],
        reason=row["reason"],
        language=row["language"],
        language_anomaly=bool(row["language_anomaly"]),
    )


class RoundsMixin(StoreBase):
    def finish_round(
        self,
        round_id: int,
        status: str,
        *,
        cost_usd: float | None = None,
        skipped: Sequence[SkippedEndpoint] = (),
        detail: Mapping[str, JsonValue] | None = None,
        at: datetime | None = None,
        holder: str | None = None,
        audit: AuditRows | None = None,
    ) -> None:
        """End a round, with its cost, skipped endpoints and detail. Only a running round
        changes status: one its decision already finished stays finished (whatever ``status``
        says), an abandoned one stays abandoned. With ``holder``, only while that claimer holds
        it (running, or finished by its decision): :class:`RoundLost` otherwise. ``audit``: rows
        written with the end (why the round was abandoned), stamped with the round."""
        if status not in ("finished", "abandoned"):
            raise ValueError(f"a round ends finished or abandoned, not {status!r}")
        r = t.rounds.c
        with self._write() as conn:
            row = conn.execute(
                select(r.status, r.runner_id, r.detail).where(r.id == round_id).with_for_update()
            ).one_or_none()
            if row is None:
                raise UnknownRound(round_id)
            if holder is not None and (row.runner_id != holder or row.status == "abandoned"):
                raise RoundLost(round_id, holder)
            ended = status if row.status == "running" else row.status
            ended_at = at or _utcnow()
            conn.execute(
                update(t.rounds)
                .where(r.id == round_id)
                .values(
                    status=ended,
                    finished_at=ended_at,
                    cost_usd=cost_usd,
                    skipped=[dict(s) for s in skipped],
                    detail={**(row.detail or {}), **(detail or {})},
                )
            )
            if row.status == "running" and ended == "finished":
                count_latency(conn, round_id, ended_at)
            if audit is not None:
                write_audit(
                    conn, audit.events, audit.actor, audit.policy_version, ended_at, round_id
                )

    def note_round(
        self, round_id: int, detail: Mapping[str, JsonValue], *, holder: str | None = None
    ) -> None:
        """Add ``detail`` to a round's detail before it ends (why it is not a successful round,
        written before its decision commits, so no read ever sees it ended without it). With
        ``holder``, only while that claimer still runs it (:class:`RoundLost` otherwise)."""
        r = t.rounds.c
        with self._write() as conn:
            require_held(conn, round_id, holder)
            row = conn.execute(
                select(r.detail).where(r.id == round_id).with_for_update()
            ).one_or_none()
            if row is None:
                raise UnknownRound(round_id)
            conn.execute(
                update(t.rounds)
                .where(r.id == round_id)
                .values(detail={**(row.detail or {}), **detail})
            )

    def abandon_stale_rounds(self, older_than: datetime, *, now: datetime | None = None) -> int:
        """Mark running rounds started, and last beating, before ``older_than`` abandoned
        (their runner died). A decided round is finished already: never touched."""
        r = t.rounds.c
        stmt = (
            update(t.rounds)
            .where(
                r.status == "running",
                r.started_at < older_than,
                or_(r.heartbeat_at.is_(None), r.heartbeat_at < older_than),
            )
            .values(
                status="abandoned", finished_at=now or _utcnow(), detail=abandoned_detail("stale")
            )
        )
        with self._write() as conn:
            return conn.execute(stmt).rowcount

    def abandon_rounds_of(self, runner_id: str, at: datetime, *, why: str) -> int:
        """Mark the rounds that ``runner_id`` still has running abandoned (it is stopping); a
        round it decided is finished already and stays so."""
        stmt = (
            update(t.rounds)
            .where(t.rounds.c.status == "running", t.rounds.c.runner_id == runner_id)
            .values(status="abandoned", finished_at=at, detail=abandoned_detail(why))
        )
        with self._write() as conn:
            return conn.execute(stmt).rowcount

    def recent_rounds(self, model: str | None = None, limit: int = 20) -> list[RoundRow]:
        r = t.rounds.c
        stmt = select(t.rounds).order_by(r.scheduled_at.desc(), r.id.desc()).limit(limit)
        if model is not None:
            stmt = stmt.where(r.model == model)
        with self._read() as conn:
            return [round_row(row) for row in conn.execute(stmt).mappings()]

    def last_finished_round_at(self, model: str | None = None) -> datetime | None:
        stmt = select(func.max(t.rounds.c.finished_at)).where(t.rounds.c.status == "finished")
        if model is not None:
            stmt = stmt.where(t.rounds.c.model == model)
        with self._read() as conn:
            return conn.execute(stmt).scalar_one_or_none()

    def round_verdicts(self, round_id: int) -> dict[str, RoundVerdict]:
        """The verdicts recorded for a round, by tag, with their contract results."""
        with self._read() as conn:
            verdicts = conn.execute(
                select(t.round_verdicts).where(t.round_verdicts.c.round_id == round_id)
            ).all()
            results = (
                conn.execute(
                    select(t.contract_results)
                    .where(t.contract_results.c.round_id == round_id)
                    .order_by(t.contract_results.c.id)
                )
                .mappings()
                .all()
            )
        by_tag: dict[str, list[ContractResult]] = {}
        for r in results:
            by_tag.setdefault(r["tag"], []).append(_contract_result(r))
        return {
            v.tag: RoundVerdict(
                model=v.model,
                tag=v.tag,
                verdict=Verdict(v.verdict),
                results=tuple(by_tag.get(v.tag, ())),
                language_anomaly_in=v.language_anomaly_in,
            )
            for v in sorted(verdicts, key=lambda v: v.tag)
        }

    def record_observations(
        self,
        round_id: int,
        model: str,
        observations: Sequence[Observation],
        at: datetime,
        *,
        holder: str | None = None,
    ) -> int:
        """Store probes; returns how many rows were written. With ``holder``, only while that
        claimer still runs the round (:class:`RoundLost`, nothing written, otherwise). They join
        the latency histograms when the round finishes (:func:`count_latency`).

        An observation whose nonce is already stored for this round and endpoint (a retried write)
        is skipped; observations without a nonce are always appended.
        """
        rows = [_probe_values(round_id, model, o, at) for o in observations]
        with self._write() as conn:
            require_held(conn, round_id, holder)
            keyed = {
                (r["tag"], r["contract"], r["attempt"], r["nonce"]) for r in rows if r["nonce"]
            }
            if keyed:
                existing = {
                    tuple(row)
                    for row in conn.execute(
                        select(
                            t.probes.c.tag,
                            t.probes.c.contract,
                            t.probes.c.attempt,
                            t.probes.c.nonce,
                        ).where(
                            t.probes.c.round_id == round_id,
                            t.probes.c.model == model,
                            t.probes.c.nonce.in_(sorted({k[3] for k in keyed})),
                        )
                    )
                }
                rows = [
                    r
                    for r in rows
                    if not r["nonce"]
                    or (r["tag"], r["contract"], r["attempt"], r["nonce"]) not in existing
                ]
            if rows:
                conn.execute(insert(t.probes), rows)
        return len(rows)

    def record_verdicts(
        self,
        round_id: int,
        model: str,
        verdicts: Mapping[str, RoundVerdict],
        served: Mapping[str, str] | None = None,
        *,
        holder: str | None = None,
    ) -> None:
        """Write contract results and round verdicts (with the model each endpoint's answers
        reported, ``served``). Idempotent per (round, endpoint): a retried write replaces what an
        earlier attempt wrote for the same endpoints, never duplicates it. With ``holder``, only
        while that claimer still runs the round (:class:`RoundLost` otherwise)."""
        if not verdicts:
            return
        tags = sorted(verdicts)
        with self._write() as conn:
            require_held(conn, round_id, holder)
            for table in (t.contract_results, t.round_verdicts):
                conn.execute(
                    delete(table).where(
                        table.c.round_id == round_id, table.c.model == model, table.c.tag.in_(tags)
                    )
                )
            conn.execute(
                insert(t.round_verdicts),
                [
                    {
                        "round_id": round_id,
                        "model": model,
                        "tag": tag,
                        "verdict": str(verdicts[tag].verdict),
                        "language_anomaly_in": verdicts[tag].language_anomaly_in,
                        "served_model": (served or {}).get(tag),
                    }
                    for tag in tags
                ],
            )
            results = [
                _result_values(round_id, model, tag, r)
                for tag in tags
                for r in verdicts[tag].results
            ]
            if results:
                conn.execute(insert(t.contract_results), results)
            raise_latest_verdicts(conn, round_id, model, tags)

    def served_models_before(self, model: str, round_id: int | None) -> dict[str, str]:
        """Each endpoint's served model in its latest round before ``round_id`` (``None``: the
        latest of all) that recorded one, among the rounds that decide: an extra round
        (``canary round --now``) or an abandoned attempt never becomes the baseline, so the next
        deciding round still sees a change first answered in one."""
        v, r = t.round_verdicts.c, t.rounds.c
        stmt = (
            select(v.tag, v.served_model)
            .join(t.rounds, r.id == v.round_id)
            .where(
                v.model == model,
                v.served_model.is_not(None),
                r.status == "finished",
                DECIDING,
            )
            .order_by(v.round_id.desc())
            .limit(SERVED_LOOKBACK)
        )
        if round_id is not None:  # no sentinel id: an int4 column refuses one past 2**31
            stmt = stmt.where(v.round_id < round_id)
        out: dict[str, str] = {}
        with self._read() as conn:
            for tag, served in conn.execute(stmt):
                out.setdefault(tag, served)
        return out

    def probes(self, round_id: int, tag: str | None = None) -> list[ProbeRow]:
        stmt = select(t.probes).where(t.probes.c.round_id == round_id).order_by(t.probes.c.id)
        if tag is not None:
            stmt = stmt.where(t.probes.c.tag == tag)
        with self._read() as conn:
            return [
                ProbeRow(**{k: v for k, v in row.items() if k != "nonce"})
                for row in conn.execute(stmt).mappings()
            ]


def finish_decided(
    conn: Connection, round_id: int, holder: str | None, at: datetime
) -> datetime | None:
    """In a decision's transaction: the round must still be held by ``holder`` (when given,
    :class:`RoundLost` otherwise); a running round ends ``finished`` here, so that no reclaim or
    shutdown can abandon it once decided, and its probes join the latency histograms. Returns
    the round's slot (None when there is no such round)."""
    r = t.rounds.c
    row = conn.execute(
        select(r.status, r.runner_id, r.scheduled_at).where(r.id == round_id).with_for_update()
    ).one_or_none()
    if holder is not None and (row is None or row.status != "running" or row.runner_id != holder):
        raise RoundLost(round_id, holder)
    if row is None:
        return None
    if row.status == "running":
        conn.execute(
            update(t.rounds).where(r.id == round_id).values(status="finished", finished_at=at)
        )
        count_latency(conn, round_id, at)
    slot: datetime = row.scheduled_at
    return slot


def _probe_values(
    round_id: int, model: str, o: Observation, at: datetime
) -> dict[str, str | int | float | bool | datetime | None]:
    return {
        "round_id": round_id,
        "model": model,
        "tag": o.tag,
        "contract": str(o.contract),
        "language": o.language,
        "attempt": o.attempt,
        "transport": str(o.transport),
        "status": o.status,
        "error": o.error,
        "served_by": o.served_by,
        "attribution_ok": o.attribution_ok,
        "ttft_s": o.ttft_s,
        "ttft_censored": o.ttft_censored,
        "reasoning_s": o.reasoning_s,
        "total_s": o.total_s,
        "finish_reason": o.finish_reason,
        "native_finish_reason": o.native_finish_reason,
        "sample": o.content[:SAMPLE_CHARS],
        "prompt_tokens": o.usage.prompt_tokens,
        "completion_tokens": o.usage.completion_tokens,
        "cost_usd": o.usage.cost_usd,
        "checksum": o.checksum,
        "nonce": o.nonce,
        "at": at,
    }


def _result_values(
    round_id: int, model: str, tag: str, r: ContractResult
) -> dict[str, str | int | float | bool | None]:
    return {
        "round_id": round_id,
        "model": model,
        "tag": tag,
        "contract": str(r.contract),
        "result": str(r.result),
        "detail": r.detail,
        "figure": r.figure,
        "reason": r.reason,
        "sample": r.sample[:SAMPLE_CHARS],
        "language": r.language,
        "language_anomaly": r.language_anomaly,
    }
