"""Apps' reports (one per generation id), the claims that keep focused checks one per (model,
contract) per look gap across replicas, and the published documents as they were when their
ETag changed (what a model's list said at a time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import JsonValue
from sqlalchemy import RowMapping, func, insert, select, update

from canary.store import tables as t
from canary.store.engine import StoreBase, insert_ignoring_conflict
from canary.store.rows import NewDocument


@dataclass(frozen=True)
class NewReport:
    at: datetime
    model: str
    provider: str | None
    tags: tuple[str, ...]
    generation_id: str | None
    symptom: str
    contracts: tuple[str, ...]
    language: str | None
    note: str | None
    sender: str  # the report token's name
    outcome: str
    received_at: datetime  # when canary took it in (``at`` is what the app says)
    reason: str | None = None


@dataclass(frozen=True)
class ReportRow(NewReport):
    id: int = 0
    checks: tuple[int, ...] = ()
    decided_at: datetime | None = None


@dataclass(frozen=True)
class DocumentRow:
    model: str
    variant: str
    etag: str
    at: datetime
    body: JsonValue


def _report(m: RowMapping) -> ReportRow:
    return ReportRow(
        at=m["at"],
        model=m["model"],
        provider=m["provider"],
        tags=tuple(m["tags"] or ()),
        generation_id=m["generation_id"],
        symptom=m["symptom"],
        contracts=tuple(m["contracts"] or ()),
        language=m["language"],
        note=m["note"],
        sender=m["sender"],
        outcome=m["outcome"],
        received_at=m["received_at"],
        reason=m["reason"],
        id=m["id"],
        checks=tuple(m["checks"] or ()),
        decided_at=m["decided_at"],
    )


class ReportsMixin(StoreBase):
    def add_report(self, new: NewReport) -> tuple[ReportRow, bool]:
        """Store a report; a generation id already reported answers the stored report and False."""
        r = t.reports.c
        values = {**new.__dict__, "tags": list(new.tags), "contracts": list(new.contracts)}
        with self._write() as conn:
            stmt = insert_ignoring_conflict(conn, t.reports, index_elements=["generation_id"])
            made = conn.execute(stmt.values(**values, checks=[]).returning(r.id)).scalar()
            wanted = r.id == made if made is not None else r.generation_id == new.generation_id
            row = conn.execute(select(t.reports).where(wanted)).mappings().one()
        return _report(row), made is not None

    def reports_by_generation(self, generation_id: str) -> ReportRow | None:
        stmt = select(t.reports).where(t.reports.c.generation_id == generation_id)
        with self._read() as conn:
            row = conn.execute(stmt).mappings().one_or_none()
        return None if row is None else _report(row)

    def attribute_report(
        self,
        report_id: int,
        provider: str | None,
        tags: Sequence[str],
        outcome: str,
        reason: str | None,
    ) -> None:
        """Name a report's provider and endpoints once canary resolved them (or could not)."""
        r = t.reports.c
        values = {"tags": list(tags), "outcome": outcome, "reason": reason}
        if provider is not None:
            values["provider"] = provider
        with self._write() as conn:
            conn.execute(update(t.reports).where(r.id == report_id).values(**values))

    def reports(
        self,
        *,
        model: str | None = None,
        since: datetime | None = None,
        outcomes: Sequence[str] = (),
        sender: str | None = None,
        limit: int = 100,
        received_since: datetime | None = None,
    ) -> list[ReportRow]:
        """Reports, newest first: seen by the app at or after ``since``, or received by canary
        at or after ``received_since`` (what the limits and the pickup count)."""
        r = t.reports.c
        stmt = select(t.reports).order_by(r.at.desc(), r.id.desc()).limit(limit)
        if model is not None:
            stmt = stmt.where(r.model == model)
        if since is not None:
            stmt = stmt.where(r.at >= since)
        if received_since is not None:
            stmt = stmt.where(r.received_at >= received_since)
        if outcomes:
            stmt = stmt.where(r.outcome.in_(list(outcomes)))
        if sender is not None:
            stmt = stmt.where(r.sender == sender)
        with self._read() as conn:
            return [_report(row) for row in conn.execute(stmt).mappings()]

    def settle_pending(
        self,
        model: str,
        since: datetime,
        answer: Callable[[ReportRow], str | None],
        *,
        check: int,
        at: datetime,
    ) -> dict[int, str]:
        """End a focused check for the model's pending reports (received at or after ``since``):
        each one ``answer`` gives an outcome gets it, with ``check`` noted; the others stay
        pending. One transaction, and each report only while still pending: a report stored
        before it commits is answered by this check (or waits for the next, as ``answer``
        says), and two checks never both settle one. Returns the outcomes given, by id."""
        r = t.reports.c
        pending = r.outcome == "pending"
        wanted = select(t.reports).where(r.model == model, r.received_at >= since, pending)
        settled: dict[int, str] = {}
        with self._write() as conn:
            for row in conn.execute(wanted.order_by(r.id)).mappings().all():
                report = _report(row)
                outcome = answer(report)
                if outcome is None:
                    continue
                checks = [*report.checks, *([] if check in report.checks else [check])]
                moved = conn.execute(
                    update(t.reports)
                    .where(r.id == report.id, pending)
                    .values(outcome=outcome, decided_at=at, checks=checks)
                )
                if moved.rowcount == 1:
                    settled[report.id] = outcome
        return settled

    def claim_focused(self, model: str, contract: str, now: datetime, gap: timedelta) -> bool:
        """Claim the (model, contract) focused check at ``now``: True for one claimer only, and
        only when the last claim is at least ``gap`` old."""
        c = t.focused_claims.c
        with self._write() as conn:
            made = conn.execute(
                insert_ignoring_conflict(conn, t.focused_claims)
                .values(model=model, contract=contract, claimed_at=now)
                .returning(c.model)
            ).scalar()
            if made is not None:
                return True
            moved = conn.execute(
                update(t.focused_claims)
                .where(c.model == model, c.contract == contract, c.claimed_at <= now - gap)
                .values(claimed_at=now)
            )
            return moved.rowcount == 1

    def record_documents(self, documents: Sequence[NewDocument], at: datetime) -> int:
        """Record, in one transaction, the published documents whose ETag is not the latest
        recorded of their variant; how many were."""
        if not documents:
            return 0
        d = t.published_documents.c
        models = sorted({doc.model for doc in documents})
        newest = select(func.max(d.id)).where(d.model.in_(models)).group_by(d.model, d.variant)
        with self._write() as conn:
            latest = {
                (model, variant): etag
                for model, variant, etag in conn.execute(
                    select(d.model, d.variant, d.etag).where(d.id.in_(newest))
                )
            }
            rows = [
                {"model": doc.model, "variant": doc.variant, "etag": doc.etag, "at": at,
                 "body": doc.body}
                for doc in documents
                if latest.get((doc.model, doc.variant)) != doc.etag
            ]  # fmt: skip
            if rows:
                conn.execute(insert(t.published_documents), rows)
        return len(rows)

    def document_at(self, model: str, variant: str, at: datetime) -> DocumentRow | None:
        """The document published for (model, variant) at ``at``: the latest recorded then."""
        d = t.published_documents.c
        stmt = (
            select(d.model, d.variant, d.etag, d.at, d.body)
            .where(d.model == model, d.variant == variant, d.at <= at)
            .order_by(d.at.desc(), d.id.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(stmt).one_or_none()
        return None if row is None else DocumentRow(*row)
