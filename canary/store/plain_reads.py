"""The reads behind a model's publication and ``canary status``, in plain SQL (see
:mod:`canary.store.plain`): run by the store on its connections and by
:class:`canary.store.light.LightStore` on a driver connection. No SQLAlchemy here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple, Protocol

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.floor import FloorRecord, Publication, publish
from canary.core.identity import Listed, capabilities_of
from canary.core.model import Contract, EndpointState, Exclusion, Layer, Streak, looks_of
from canary.core.stats import Histogram
from canary.store.plain import Reader, SqlRow
from canary.store.rows import ContractResultRow, QuarantineRow, RoundRow, SkippedEndpoint
from canary.store.ttft import hour_of

EMPTY_LISTING = ""  # marker tag of a snapshot row that records an empty endpoints list

# --- rows ----------------------------------------------------------------------------------------


def _skipped_of(item: Any) -> SkippedEndpoint:
    """A stored skipped entry: ``{provider, reason}``, or a ``[provider, reason]`` pair."""
    if isinstance(item, Mapping):
        return SkippedEndpoint(
            provider=str(item.get("provider")), reason=str(item.get("reason") or "")
        )
    if isinstance(item, list) and len(item) == 2:
        return SkippedEndpoint(provider=str(item[0]), reason=str(item[1]))
    return SkippedEndpoint(provider=str(item), reason="")


def round_row(row: SqlRow) -> RoundRow:
    return RoundRow(
        id=row.id,
        model=row.model,
        scheduled_at=row.scheduled_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        status=row.status,
        policy_version=row.policy_version,
        runner_id=row.runner_id,
        checksums=dict(row.checksums or {}),
        cost_usd=row.cost_usd,
        skipped=tuple(_skipped_of(s) for s in row.skipped or ()),
        detail=dict(row.detail or {}),
        heartbeat_at=row.heartbeat_at,
    )


def contract_result_row(row: SqlRow, at: datetime | None = None) -> ContractResultRow:
    return ContractResultRow(
        round_id=row.round_id,
        model=row.model,
        tag=row.tag,
        contract=row.contract,
        result=row.result,
        detail=row.detail,
        figure=row.figure,
        reason=row.reason,
        sample=row.sample,
        language=row.language,
        language_anomaly=bool(row.language_anomaly),
        at=at,
    )


def quarantine_row(row: SqlRow) -> QuarantineRow:
    return QuarantineRow(
        id=row.id,
        model=row.model,
        tag=row.tag,
        started_at=row.started_at,
        until=row.until,
        released_at=row.released_at,
        release_why=row.release_why,
        step=row.step,
        reason=row.reason,
        evidence=looks_of(row.evidence),
        causes=tuple(row.causes or ()),
        withheld_at=row.withheld_at,
        policy_version=row.policy_version,
        round_id=row.round_id,
    )


def quarantine_exclusion(q: QuarantineRow) -> Exclusion:
    """A quarantine as an entry of the published list's quarantine layer."""
    return Exclusion(
        model=q.model,
        tag=q.tag,
        layer=Layer.quarantine,
        reason=q.reason,
        since=q.started_at,
        until=q.until,
        evidence=q.evidence,
        id=q.id,
        causes=q.causes,
    )


def _as_utc(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _streaks(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Streak, ...]:
    return tuple(
        Streak(
            contract=Contract(s["contract"]),
            count=int(s["count"]),
            last_fail_at=_as_utc(s.get("last_fail_at")),
            evidence=looks_of(s.get("evidence")),
            warned=bool(s.get("warned")),
        )
        for s in raw or ()
    )


def endpoint_state(row: SqlRow) -> EndpointState:
    return EndpointState(
        model=row.model,
        tag=row.tag,
        streaks=_streaks(row.streaks),
        recovery_streak=row.recovery_streak,
        recovery_evidence=looks_of(row.recovery_evidence),
        quarantined_since=row.quarantined_since,
        quarantined_until=row.quarantined_until,
        causes=tuple(row.causes or ()),
        ladder_step=row.ladder_step,
        last_quarantine_at=row.last_quarantine_at,
        next_language=row.next_language,
        next_language_since=row.next_language_since,
        version=row.version,
    )


def runtime_exclusion(row: SqlRow) -> Exclusion:
    return Exclusion(
        model=row.model,
        tag=row.tag,
        layer=Layer.runtime,
        reason=row.reason,
        since=row.created_at,
        until=row.until,
        id=row.id,
    )


def listing_of(snapshot: dict[str, dict[str, Any]] | None) -> tuple[Listed, ...] | None:
    if snapshot is None:
        return None
    return tuple(
        Listed(tag, meta.get("service_tier"), capabilities_of(meta.get("supported_parameters")))
        for tag, meta in sorted(snapshot.items())
    )


@dataclass(frozen=True)
class ModelLayers:
    """What a model's publication is computed from, read at one moment."""

    listing: tuple[Listed, ...] | None
    runtime: tuple[Exclusion, ...]
    quarantines: tuple[Exclusion, ...]
    record: FloorRecord

    def publish(
        self,
        model: str,
        builtin: Sequence[Exclusion],
        floor: int,
        now: datetime,
        *,
        controls: Controls = NO_CONTROLS,
    ) -> Publication:
        return publish(
            model,
            self.listing,
            builtin,
            self.runtime,
            self.quarantines,
            floor=floor,
            now=now,
            controls=controls,
        )


# --- queries -------------------------------------------------------------------------------------

# Distinct values read by hopping along an index, one step a value, instead of reading every row
# (neither SQLite nor PostgreSQL does this on their own): the models of ``rounds``; and, for each
# model of a list, its tags in ``endpoint_snapshots`` and ``round_verdicts`` (with each tag's
# latest judged round), all models in one statement.
_ROUND_MODELS = (
    "m(model) AS ("
    " SELECT min(model) FROM rounds"
    " UNION ALL"
    " SELECT (SELECT min(r.model) FROM rounds r WHERE r.model > m.model) FROM m"
    " WHERE m.model IS NOT NULL)"
)
DISTINCT_ROUND_MODELS = (
    f"WITH RECURSIVE {_ROUND_MODELS} SELECT model FROM m WHERE model IS NOT NULL"
)


def _tags_walk(r: Reader, table: str, models: Sequence[str], params: dict[str, object]) -> str:
    """``d(model, tag)``: each model's distinct tags in ``table``, down its (model, tag) index."""
    return (
        f"WITH RECURSIVE m(model) AS ({r.each('models', models, params)}),"
        " d(model, tag) AS ("
        f" SELECT m.model, (SELECT min(x.tag) FROM {table} x WHERE x.model = m.model) FROM m"
        " UNION ALL"
        f" SELECT d.model, (SELECT min(x.tag) FROM {table} x"
        " WHERE x.model = d.model AND x.tag > d.tag) FROM d WHERE d.tag IS NOT NULL)"
    )


# each tag's latest verdict of a round not abandoned: down the (model, tag, round_id) index
_LATEST_JUDGED = (
    " SELECT d.model AS model, d.tag AS tag, (SELECT v.round_id FROM round_verdicts v"
    " WHERE v.model = d.model AND v.tag = d.tag AND NOT EXISTS (SELECT 1 FROM rounds r"
    " WHERE r.id = v.round_id AND r.status = 'abandoned')"  # ix_rounds_abandoned, not a join
    " ORDER BY v.round_id DESC LIMIT 1) AS round_id FROM d WHERE d.tag IS NOT NULL"
)
_ACTIVE_RUNTIME = (
    "SELECT * FROM exclusions WHERE removed_at IS NULL AND (until IS NULL OR until > :now)"
)


def known_models(r: Reader) -> list[str]:
    """Models with an endpoint state or a round (every snapshot belongs to a round)."""
    states = set(r.scalars("SELECT DISTINCT model FROM endpoint_state"))
    return sorted(states | set(r.scalars(DISTINCT_ROUND_MODELS)))


def known_tags_of(r: Reader, models: Sequence[str]) -> dict[str, list[str]]:
    """Each model's endpoint tags that have a state or were ever listed."""
    out: dict[str, set[str]] = {m: set() for m in models}
    if not out:
        return {}
    params: dict[str, object] = {}
    sql = f"SELECT model, tag FROM endpoint_state WHERE model {r.in_('m', list(out), params)}"
    for row in r.rows(sql, params):
        out[row.model].add(row.tag)
    walk: dict[str, object] = {}
    sql = _tags_walk(r, "endpoint_snapshots", list(out), walk)
    for model, tag in r.values(sql + " SELECT model, tag FROM d WHERE tag IS NOT NULL", walk):
        out[model].add(tag)
    return {m: sorted(tags - {EMPTY_LISTING}) for m, tags in out.items()}


def latest_snapshots(
    r: Reader, models: Sequence[str]
) -> dict[str, dict[str, dict[str, Any]] | None]:
    """Each model's latest snapshot, meta by tag (None when never listed); one statement, each
    model's latest time read down its (model, at) index."""
    out: dict[str, dict[str, dict[str, Any]] | None] = dict.fromkeys(models)
    if not out:
        return {}
    params: dict[str, object] = {}
    sql = (
        "SELECT s.model AS model, s.tag AS tag, s.meta AS meta, s.id AS id"
        " FROM endpoint_snapshots s JOIN (SELECT m.value AS model,"
        " (SELECT max(x.at) FROM endpoint_snapshots x WHERE x.model = m.value) AS at"
        f" FROM ({r.each('models', list(out), params)}) m) latest"
        " ON s.model = latest.model AND s.at = latest.at"
    )
    rows = r.rows(sql, params, table="endpoint_snapshots")
    for row in sorted(rows, key=lambda row: (row.model, row.tag, row.id)):
        snapshot = out[row.model]
        if snapshot is None:
            snapshot = out[row.model] = {}
        if row.tag != EMPTY_LISTING:
            snapshot[row.tag] = dict(row.meta)
    return out


def snapshot_on(r: Reader, model: str) -> dict[str, dict[str, Any]] | None:
    """The model's latest snapshot: meta by tag; None when never listed."""
    return latest_snapshots(r, [model])[model]


def latest_listings(r: Reader, models: Sequence[str]) -> dict[str, tuple[Listed, ...] | None]:
    return {m: listing_of(s) for m, s in latest_snapshots(r, models).items()}


def active_runtime(r: Reader, model: str | None, now: datetime) -> list[Exclusion]:
    sql = _ACTIVE_RUNTIME
    params: dict[str, object] = {"now": now}
    if model is not None:
        sql, params["model"] = sql + " AND model = :model", model
    rows = r.rows(sql + " ORDER BY model, tag, id", params, table="exclusions")
    return [runtime_exclusion(row) for row in rows]


def layers_on(r: Reader, model: str, now: datetime) -> ModelLayers:
    return model_layers(r, [model], now)[model]


def model_layers(
    r: Reader,
    models: Sequence[str],
    now: datetime,
    snapshots: Mapping[str, dict[str, dict[str, Any]] | None] | None = None,
) -> dict[str, ModelLayers]:
    """Listing, runtime entries, active quarantines and the floor record of each model: four
    statements whatever the number of models (three when the latest ``snapshots`` are given)."""
    wanted = list(dict.fromkeys(models))
    if not wanted:
        return {}
    params: dict[str, object] = {"now": now}
    named = r.in_("m", wanted, params)
    held: dict[str, list[QuarantineRow]] = {m: [] for m in wanted}
    sql = (
        f"SELECT * FROM quarantines WHERE model {named} AND released_at IS NULL"
        " AND until > :now ORDER BY model, tag, id"
    )
    for row in r.rows(sql, params, table="quarantines"):
        held[row.model].append(quarantine_row(row))
    sql = f"SELECT open_model FROM floor_episodes WHERE open_model {named}"
    open_episodes = set(r.scalars(sql, params))
    runtime: dict[str, list[Exclusion]] = {m: [] for m in wanted}
    sql = f"{_ACTIVE_RUNTIME} AND model {named} ORDER BY model, tag, id"
    for row in r.rows(sql, params, table="exclusions"):
        runtime[row.model].append(runtime_exclusion(row))
    if snapshots is None or not set(wanted) <= set(snapshots):
        snapshots = latest_snapshots(r, wanted)
    out = {}
    for model in wanted:
        rows = held[model]
        quarantined = tuple(quarantine_exclusion(q) for q in rows)
        withheld = {q.id: q.tag for q in rows if q.withheld_at is not None}
        out[model] = ModelLayers(
            listing_of(snapshots[model]),
            tuple(runtime[model]),
            quarantined,
            FloorRecord(withheld, model in open_episodes),
        )
    return out


def quarantines(
    r: Reader, model: str | None, active_only: bool, now: datetime | None
) -> list[QuarantineRow]:
    """Quarantine rows, newest first. Active: not released and (given ``now``) not over."""
    where: list[str] = []
    params: dict[str, object] = {}
    if model is not None:
        where.append("model = :model")
        params["model"] = model
    if active_only:
        where.append("released_at IS NULL")
        if now is not None:
            where.append("until > :now")
            params["now"] = now
    sql = "SELECT * FROM quarantines" + (" WHERE " + " AND ".join(where) if where else "")
    rows = r.rows(sql + " ORDER BY started_at DESC, id DESC", params, table="quarantines")
    return [quarantine_row(row) for row in rows]


def states_of(r: Reader, models: Sequence[str]) -> dict[str, dict[str, EndpointState]]:
    out: dict[str, dict[str, EndpointState]] = {m: {} for m in models}
    params: dict[str, object] = {}
    sql = f"SELECT * FROM endpoint_state WHERE model {r.in_('m', list(out), params)}"
    for row in r.rows(sql, params, table="endpoint_state"):
        out[row.model][row.tag] = endpoint_state(row)
    return out


def recent_rounds(r: Reader, model: str | None, limit: int) -> list[RoundRow]:
    where = " WHERE model = :model" if model is not None else ""
    sql = f"SELECT * FROM rounds{where} ORDER BY scheduled_at DESC, id DESC LIMIT :limit"
    params: dict[str, object] = {"limit": limit}
    if model is not None:
        params["model"] = model
    rows = r.rows(sql, params, table="rounds")
    return [round_row(row) for row in rows]


def round_spend(r: Reader, since: datetime, model: str | None) -> dict[str, float]:
    """USD per model of the rounds started since ``since`` (``rounds.cost_usd``: reported
    costs, estimated from prices where a probe had none). Running rounds count once closed."""
    params: dict[str, object] = {"since": since}
    where = ""
    if model is not None:
        where, params["model"] = " AND model = :model", model
    sql = (
        "SELECT model, coalesce(sum(cost_usd), 0.0) FROM rounds"
        f" WHERE started_at >= :since AND cost_usd IS NOT NULL{where}"
        " GROUP BY model ORDER BY model"
    )
    return {values[0]: float(values[1]) for values in r.values(sql, params)}


def last_closed_rounds(r: Reader, model: str | None) -> dict[str, RoundRow]:
    """Per model, its latest round that has ended (finished or abandoned): each model's rounds
    read backwards down its (model, scheduled_at) index, to the first that has ended."""
    params: dict[str, object] = {}
    if model is None:
        models = f"WITH RECURSIVE {_ROUND_MODELS}, ms(model) AS (SELECT model FROM m"
        models += " WHERE model IS NOT NULL)"
    else:
        models, params["model"] = "WITH ms(model) AS (SELECT CAST(:model AS VARCHAR(200)))", model
    sql = (
        f"{models}"
        " SELECT r.* FROM ms JOIN rounds r ON r.id = (SELECT x.id FROM rounds x"
        " WHERE x.model = ms.model AND x.finished_at IS NOT NULL"
        " ORDER BY x.scheduled_at DESC, x.id DESC LIMIT 1) ORDER BY r.model"
    )
    return {row.model: round_row(row) for row in r.rows(sql, params, table="rounds")}


def _latest_judged_rounds(r: Reader, models: Sequence[str]) -> dict[tuple[str, str], int]:
    """(model, tag) -> the latest round that judged the endpoint, abandoned attempts left out
    (their decision never came). From latest_verdicts when its round still stands (not
    abandoned, its verdict not pruned); a model where one does not, or with no row there (its
    verdicts written by an older canary), is walked down round_verdicts' index instead."""
    params: dict[str, object] = {}
    sql = (
        f"SELECT model, tag, round_id FROM latest_verdicts WHERE model {r.in_('m', models, params)}"
    )
    pointed = {(model, tag): round_id for model, tag, round_id in r.values(sql, params)}
    standing: set[tuple[str, str, int]] = set()
    if pointed:
        params = {}
        rounds = r.in_("r", sorted(set(pointed.values())), params)
        sql = (
            f"SELECT v.model, v.tag, v.round_id FROM round_verdicts v WHERE v.round_id {rounds}"
            f" AND v.model {r.in_('m', models, params)} AND NOT EXISTS (SELECT 1 FROM rounds x"
            " WHERE x.id = v.round_id AND x.status = 'abandoned')"
        )
        standing = {(model, tag, round_id) for model, tag, round_id in r.values(sql, params)}
    latest = {key: rid for key, rid in pointed.items() if (*key, rid) in standing}
    walked = {model for (model, tag), rid in pointed.items() if (model, tag, rid) not in standing}
    walked.update(set(models) - {model for model, _ in pointed})
    if walked:
        latest.update(walk_latest_judged_rounds(r, sorted(walked)))
    return latest


def walk_latest_judged_rounds(r: Reader, models: Sequence[str]) -> dict[tuple[str, str], int]:
    """:func:`_latest_judged_rounds` from round_verdicts alone: its index walked per endpoint."""
    walk: dict[str, object] = {}
    return {
        (row.model, row.tag): row.round_id
        for row in r.rows(
            _tags_walk(r, "round_verdicts", list(models), walk) + _LATEST_JUDGED, walk
        )
        if row.round_id is not None
    }


def _of_latest_rounds(
    r: Reader, models: Sequence[str], select: str, params: dict[str, object]
) -> tuple[dict[tuple[str, str], int], str | None]:
    """Each endpoint's latest judged round, and ``select`` (columns of ``contract_results c``,
    joins) over the results of those rounds; None when no round judged any. By round first: the
    (round_id, model, tag) index finds a handful of rows. Rows of other endpoints judged in the
    same rounds come too: the caller keeps an endpoint's rows of its own latest round."""
    latest = _latest_judged_rounds(r, models) if models else {}
    if not latest:
        return latest, None
    rounds = r.in_("r", sorted(set(latest.values())), params)
    where = f" WHERE c.round_id {rounds} AND c.model {r.in_('m', list(models), params)}"
    return latest, select + where


def latest_results_of(
    r: Reader, models: Sequence[str]
) -> dict[str, dict[str, dict[str, ContractResultRow]]]:
    """For each endpoint of each model, its contract results from the latest round that judged
    it: two queries in all."""
    out: dict[str, dict[str, dict[str, ContractResultRow]]] = {m: {} for m in models}
    params: dict[str, object] = {}
    select = (
        "SELECT c.*, r.scheduled_at AS scheduled_at FROM contract_results c"
        " JOIN rounds r ON r.id = c.round_id"
    )
    latest, sql = _of_latest_rounds(r, list(out), select, params)
    if sql is None:
        return out
    # sorted here, since an ORDER BY lets SQLite prefer walking every result of the models
    rows = r.rows(sql, params, table="contract_results", kinds={"scheduled_at": "time"})
    for row in sorted(rows, key=lambda row: row.id):
        if latest.get((row.model, row.tag)) == row.round_id:
            out[row.model].setdefault(row.tag, {})[row.contract] = contract_result_row(
                row, row.scheduled_at
            )
    return out


_id = itemgetter(0)  # a result's id: the order results were written in


class ResultMark(NamedTuple):
    """One contract's outcome in an endpoint's latest judged round, as operators see it."""

    result: str
    detail: str
    round_id: int


def latest_marks_of(
    r: Reader, models: Sequence[str]
) -> dict[str, dict[str, dict[str, ResultMark]]]:
    """:func:`latest_results_of` cut to what the status views show: three columns of each result
    and none of its answer sample, unconverted (a fifth of the time for 2,000 endpoints)."""
    out: dict[str, dict[str, dict[str, ResultMark]]] = {m: {} for m in models}
    params: dict[str, object] = {}
    select = "SELECT c.id, c.model, c.tag, c.contract, c.result, c.detail, c.round_id"
    latest, sql = _of_latest_rounds(r, list(out), select + " FROM contract_results c", params)
    if sql is None:
        return out
    for _, model, tag, contract, result, detail, round_id in sorted(r.values(sql, params), key=_id):
        if latest.get((model, tag)) == round_id:
            out[model].setdefault(tag, {})[contract] = ResultMark(result, detail, round_id)
    return out


_HISTOGRAMS = (
    "SELECT tag, bucket, sum(n), max(top), sum(CASE WHEN hour >= :day THEN n ELSE 0 END),"
    " max(CASE WHEN hour >= :day THEN top END) FROM ttft_buckets"
    " WHERE model = :model AND hour >= :week GROUP BY tag, bucket"
)


def ttft_histograms_of(
    r: Reader, models: Sequence[str], day_since: datetime, week_since: datetime
) -> dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]]:
    """Per model, each tag's latency histogram since ``day_since`` and since ``week_since``
    (whole hours: each bound is taken back to the start of its hour); one query per model
    (grouping one model at a time sorts far less than all at once)."""
    out: dict[str, tuple[dict[str, Histogram], dict[str, Histogram]]] = {}
    bounds = {"day": hour_of(day_since), "week": hour_of(week_since)}
    for model in dict.fromkeys(models):
        day: dict[str, Histogram] = {}
        week: dict[str, Histogram] = {}
        for tag, bucket, n, top, day_n, day_top in r.values(
            _HISTOGRAMS, {**bounds, "model": model}
        ):
            week.setdefault(tag, {})[bucket] = (int(n), float(top))
            if day_n:
                day.setdefault(tag, {})[bucket] = (int(day_n), float(day_top))
        out[model] = (day, week)
    return out


_RECENT_TTFT = (
    "SELECT tag, ttft_s FROM (SELECT p.tag AS tag, p.ttft_s AS ttft_s, p.at AS at, p.id AS id,"
    " row_number() OVER (PARTITION BY p.tag ORDER BY p.at DESC, p.id DESC) AS rank"
    " FROM probes p JOIN rounds r ON r.id = p.round_id"
    " WHERE p.model = :model AND p.at >= :since AND p.ttft_s IS NOT NULL"
    " AND p.attribution_ok = :yes AND r.status = 'finished') recent"
    " WHERE rank <= :per_tag ORDER BY tag, at, id"
)


def ttft_recent(r: Reader, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]:
    """The latest ``per_tag`` times to first token of each tag since ``since``, oldest first:
    those of finished rounds, what the histograms count (never an abandoned attempt's)."""
    out: dict[str, list[float]] = {}
    params = {"model": model, "since": since, "per_tag": per_tag, "yes": True}
    for tag, seconds in r.values(_RECENT_TTFT, params):
        out.setdefault(tag, []).append(float(seconds))
    return out


class WindowFigures(NamedTuple):
    """One endpoint's time-to-first-token figures over one window ending ``at`` (a tuple, as
    :class:`ResultMark`: 4,000 of them for a status of 2,000 endpoints)."""

    at: datetime
    n: int
    p50: float | None
    p95: float | None
    p99: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {"p50": self.p50, "p95": self.p95, "p99": self.p99, "n": self.n}


_FIGURES = "SELECT model, tag, span, at, n, p50, p95, p99 FROM latency_figures WHERE model "


def latency_figures_of(
    r: Reader, models: Sequence[str]
) -> dict[str, dict[str, dict[str, WindowFigures]]]:
    """Per model and tag, the latency figures by window name (``24h``, ``7d``) as of the model's
    latest finished round; one query for all models."""
    out: dict[str, dict[str, dict[str, WindowFigures]]] = {m: {} for m in models}
    params: dict[str, object] = {}
    rows = r.rows(_FIGURES + r.in_("m", list(out), params), params, table="latency_figures")
    for row in rows:
        out[row.model].setdefault(row.tag, {})[row.span] = WindowFigures(
            row.at, row.n, row.p50, row.p95, row.p99
        )
    return out


class StoreReads(Protocol):
    """What the read models (:mod:`canary.views`) and the ignore list read: the store itself, or
    a :class:`canary.store.light.LightStore` for a command that only reads."""

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What "the store is unreachable" raises (anything else is a bug)."""
        ...

    def known_models(self) -> list[str]: ...
    def known_tags(self, model: str) -> list[str]: ...
    def known_tags_of(self, models: Sequence[str]) -> dict[str, list[str]]: ...
    def recent_rounds(self, model: str | None = None, limit: int = 20) -> list[RoundRow]: ...
    def model_layers(self, models: Sequence[str], now: datetime) -> dict[str, ModelLayers]: ...
    def round_spend(self, since: datetime, model: str | None = None) -> dict[str, float]: ...
    def last_closed_rounds(self, model: str | None = None) -> dict[str, RoundRow]: ...
    def load_states_of(self, models: Sequence[str]) -> dict[str, dict[str, EndpointState]]: ...
    def latest_marks_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, ResultMark]]]: ...
    def quarantines(
        self, model: str | None = None, active_only: bool = True, now: datetime | None = None
    ) -> list[QuarantineRow]: ...
    def active_exclusions(self, model: str | None, now: datetime) -> list[Exclusion]: ...
    def latest_listings(self, models: Sequence[str]) -> dict[str, tuple[Listed, ...] | None]: ...
    def latest_snapshots(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, Any]] | None]: ...
    def latency_figures_of(
        self, models: Sequence[str]
    ) -> dict[str, dict[str, dict[str, WindowFigures]]]: ...
    def ttft_recent(self, model: str, since: datetime, per_tag: int) -> dict[str, list[float]]: ...
