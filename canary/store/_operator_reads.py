"""What operators read (status, history, latency, spend): the models and endpoints the store
knows, each endpoint's latest results and verdict history, the rounds' spend."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import FromClause, func, select

from canary.core.stats import Histogram
from canary.store import latency, latest_verdicts
from canary.store import tables as t
from canary.store._decode import contract_result_row, round_row
from canary.store._index_walks import distinct_values, each, tags_of
from canary.store._round_kinds import DECIDING
from canary.store._snapshots import EMPTY_LISTING
from canary.store.engine import StoreBase
from canary.store.log_rows import HistoryRow
from canary.store.rows import ContractResultRow, ResultMark, RoundRow, WindowFigures


class OperatorReadsMixin(StoreBase):
    def known_models(self) -> list[str]:
        """Models with an endpoint state or a round (every snapshot belongs to a round)."""
        with self._read() as conn:
            states = conn.execute(select(t.endpoint_state.c.model).distinct()).scalars()
            rounds = conn.execute(distinct_values(t.rounds, "model")).scalars()
            return sorted(set(states) | set(rounds))

    def known_tags(self, model: str) -> list[str]:
        return self.known_tags_of([model])[model]

    def known_tags_of(self, models: Sequence[str]) -> dict[str, list[str]]:
        """Each model's endpoint tags that have a state or were ever listed."""
        out: dict[str, set[str]] = {m: set() for m in models}
        if not out:
            return {}
        s = t.endpoint_state.c
        with self._read() as conn:
            judged = conn.execute(select(s.model, s.tag).where(s.model.in_(list(out))))
            walk = tags_of(conn, t.endpoint_snapshots, list(out))
            listed = conn.execute(select(walk.c.model, walk.c.tag).where(walk.c.tag.is_not(None)))
            for model, tag in [*judged, *listed]:
                out[model].add(tag)
        return {m: sorted(tags - {EMPTY_LISTING}) for m, tags in out.items()}

    def ttft_histograms_of(
        self, models: Sequence[str], day_since: datetime, week_since: datetime
    ) -> dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]]:
        """Per model, each tag's latency histogram since ``day_since`` and since ``week_since``
        (whole hours), read on one connection."""
        with self._read() as conn:
            return latency.ttft_histograms_of(conn, models, day_since, week_since)

    def latency_figures_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, WindowFigures]]]:
        """Per model and tag, the latency figures by window as of the model's latest round."""
        with self._read() as conn:
            return latency.latency_figures_of(conn, models)

    def ttft_recent(self, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]:
        """The latest ``per_tag`` times to first token of each tag since ``since``, oldest first:
        those of finished rounds, what the histograms count (never an abandoned attempt's)."""
        with self._read() as conn:
            return latency.ttft_recent(conn, model, since, per_tag)

    def history(self, model: str, tag: str, limit: int = 50) -> list[HistoryRow]:
        """The endpoint's round verdicts with their contract results, newest round first."""
        v, r = t.round_verdicts.c, t.rounds.c
        verdicts_stmt = (
            select(
                t.round_verdicts,
                r.scheduled_at,
                r.status.label("round_status"),
                (~DECIDING).label("extra"),
            )
            .join(t.rounds, r.id == v.round_id)
            .where(v.model == model, v.tag == tag)
            .order_by(r.scheduled_at.desc(), v.round_id.desc())
            .limit(limit)
        )
        with self._read() as conn:
            verdicts = conn.execute(verdicts_stmt).all()
            ids = [row.round_id for row in verdicts]
            c = t.contract_results.c
            results = (
                conn.execute(
                    select(t.contract_results)
                    .where(c.model == model, c.tag == tag, c.round_id.in_(ids))
                    .order_by(c.id)
                )
                .mappings()
                .all()
            )
        by_round: dict[int, list[ContractResultRow]] = {}
        at_of = {row.round_id: row.scheduled_at for row in verdicts}
        for row in results:
            by_round.setdefault(row["round_id"], []).append(
                contract_result_row(row, at_of[row["round_id"]])
            )
        return [
            HistoryRow(
                round_id=row.round_id,
                at=row.scheduled_at,
                model=row.model,
                tag=row.tag,
                verdict=row.verdict,
                language_anomaly_in=row.language_anomaly_in,
                results=tuple(by_round.get(row.round_id, ())),
                round_status=row.round_status,
                extra=bool(row.extra),
            )
            for row in verdicts
        ]

    def latest_results_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, ContractResultRow]]]:
        """For each endpoint of each model, its contract results from the latest round that
        judged it: two queries in all. An abandoned attempt's verdicts are left out (its decision
        never came)."""
        with self._read() as conn:
            return latest_verdicts.latest_results_of(conn, models)

    def latest_marks_of(self, models: Sequence[str]) -> dict[str, dict[str, dict[str, ResultMark]]]:
        with self._read() as conn:
            return latest_verdicts.latest_marks_of(conn, models)

    def spend(self, since: datetime, model: str | None = None) -> float:
        """USD spent on probes since ``since`` (as OpenRouter reported it)."""
        c = t.probes.c
        stmt = select(func.coalesce(func.sum(c.cost_usd), 0.0)).where(c.at >= since)
        if model is not None:
            stmt = stmt.where(c.model == model)
        with self._read() as conn:
            return float(conn.execute(stmt).scalar_one())

    def round_spend(self, since: datetime, model: str | None = None) -> dict[str, float]:
        """USD per model of the rounds started since ``since`` (``rounds.cost_usd``: reported
        costs, estimated from prices where a probe had none). Running rounds count once closed."""
        r = t.rounds.c
        stmt = (
            select(r.model, func.coalesce(func.sum(r.cost_usd), 0.0))
            .where(r.started_at >= since, r.cost_usd.is_not(None))
            .group_by(r.model)
            .order_by(r.model)
        )
        if model is not None:
            stmt = stmt.where(r.model == model)
        with self._read() as conn:
            return {m: float(usd) for m, usd in conn.execute(stmt)}

    def last_closed_rounds(self, model: str | None = None) -> dict[str, RoundRow]:
        """Per model, its latest round that has ended (finished or abandoned): each model's rounds
        read backwards down its (model, scheduled_at) index, to the first that has ended."""
        r, x = t.rounds.c, t.rounds.alias().c
        with self._read() as conn:
            models: FromClause
            if model is None:
                walk = distinct_values(t.rounds, "model").subquery()
                models, name = walk, walk.c.value
            else:
                listed = each(conn, [model])
                models, name = listed, listed.c.value
            last = (
                select(x.id)
                .where(x.model == name, x.finished_at.is_not(None))
                .order_by(x.scheduled_at.desc(), x.id.desc())
                .limit(1)
                .scalar_subquery()
            )
            stmt = select(t.rounds).join_from(models, t.rounds, r.id == last).order_by(r.model)
            return {row["model"]: round_row(row) for row in conn.execute(stmt).mappings()}
