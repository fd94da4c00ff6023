"""Migration 0011 stores evidence as looks: the states' and quarantines' bare round ids become
``{"kind": "round", "id", "at"}`` with each round's start (a fresh database per store: the store
URL fixture gives one per module). Rows it does not rewrite (the audit log) still load."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, select, text

from canary.core.model import Contract, Look, Streak
from canary.store import Store
from canary.store import tables as t
from canary.store.migrate import head_revision, upgrade

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/looks"


def _round(conn: object, at: datetime) -> int:
    rid: int = conn.execute(  # type: ignore[attr-defined]
        insert(t.rounds)
        .values(
            model=MODEL,
            scheduled_at=at,
            started_at=at,
            status="finished",
            policy_version="p-1",
            runner_id="r",
            checksums={},
            skipped=[],
            detail={},
        )  # fmt: skip
        .returning(t.rounds.c.id)
    ).scalar_one()
    return rid


def test_the_upgrade_gives_stored_evidence_the_start_of_its_rounds(store_url: str) -> None:
    store = Store(store_url)
    try:
        assert upgrade(store.engine, "0010") == "0010"
        naive = store.dialect == "sqlite"

        def at(moment: datetime) -> datetime:
            return moment.replace(tzinfo=None) if naive else moment

        first, second = NOW - timedelta(minutes=60), NOW - timedelta(minutes=30)
        with store.engine.begin() as conn:
            r1, r2 = _round(conn, first), _round(conn, second)
            streaks = (
                f'[{{"contract": "schema", "count": 2, "last_fail_at": "{second.isoformat()}", '
                f'"evidence": [{r1}, {r2}], "warned": false}}]'
            )
            conn.execute(
                text(
                    "INSERT INTO endpoint_state (model, tag, failing_streak, streaks,"
                    " recovery_streak, recovery_evidence, quarantined_since, quarantined_until,"
                    " causes, ladder_step, last_quarantine_at, version, updated_at) VALUES"
                    f" (:model, 'alpha', 2, :streaks, 1, '[{r2}, 999999]', :since, :until,"
                    " '[\"schema\"]', 1, :since, 3, :since)"
                ),
                {
                    "model": MODEL,
                    "streaks": streaks,
                    "since": at(second),
                    "until": at(NOW + timedelta(days=1)),
                },  # fmt: skip
            )
            conn.execute(
                text(
                    "INSERT INTO quarantines (model, tag, started_at, until, step, reason,"
                    " evidence, causes, policy_version) VALUES (:model, 'alpha', :since, :until,"
                    f" 1, 'schema failed 2 rounds in a row', '[{r1}, {r2}]', '[\"schema\"]',"
                    " 'p-old')"
                ),
                {"model": MODEL, "since": at(second), "until": at(NOW + timedelta(days=1))},
            )
            conn.execute(
                text(
                    "INSERT INTO audit (at, actor, event, model, tag, detail, evidence,"
                    " notify_attempts) VALUES (:at, 'canary', 'quarantine', :model, 'alpha',"
                    f" '{{}}', '[{r1}, {r2}]', 0)"
                ),
                {"model": MODEL, "at": at(second)},
            )
        assert store.upgrade() == head_revision()
        state = store.load_states(MODEL)["alpha"]
        assert state.streaks == (
            Streak(Contract.schema, 2, second, (Look.round(r1, first), Look.round(r2, second))),
        )
        # a round no longer stored keeps its id, its start unknown
        assert state.recovery_evidence == (Look.round(r2, second), Look.round(999999, None))
        [quarantine] = store.quarantines(MODEL)
        assert quarantine.evidence == (Look.round(r1, first), Look.round(r2, second))
        [row] = store.audit(MODEL)  # not rewritten: bare ids read as looks of unknown start
        assert row.evidence == (Look.round(r1, None), Look.round(r2, None))
        with store.engine.connect() as conn:
            stored = conn.execute(select(t.quarantines.c.evidence)).scalar_one()
        assert stored == [
            {"kind": "round", "id": r1, "at": "2026-12-01T11:00:00Z"},
            {"kind": "round", "id": r2, "at": "2026-12-01T11:30:00Z"},
        ]
    finally:
        store.dispose()
