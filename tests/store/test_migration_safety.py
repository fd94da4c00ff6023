"""Migration 0003 carries quarantines and states from before per-contract counts (a fresh database:
the store URL fixture gives one per module)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from canary.core.model import ALL_CONTRACTS, Look
from canary.store import Store
from canary.store.migrate import head_revision, upgrade

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_quarantines_migrate_with_every_contract_as_their_cause(store_url: str) -> None:
    store = Store(store_url)
    try:
        assert upgrade(store.engine, "0002") == "0002"
        until = NOW + timedelta(days=1)
        naive = store.dialect == "sqlite"

        def at(moment: datetime) -> datetime:
            return moment.replace(tzinfo=None) if naive else moment

        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO endpoint_state (model, tag, failing_streak, passing_streak,"
                    " quarantined_since, quarantined_until, ladder_step, last_quarantine_at,"
                    " next_language, evidence, version, updated_at) VALUES"
                    " ('acme/m', 'alpha', 3, 1, :since, :until, 1, :since, 'pt', '[7, 8]', 4,"
                    " :since), ('acme/m', 'beta', 1, 0, NULL, NULL, 0, NULL, NULL, '[9]', 2,"
                    " :since)"
                ),
                {"since": at(NOW), "until": at(until)},
            )
            conn.execute(
                text(
                    "INSERT INTO quarantines (model, tag, started_at, until, step, reason,"
                    " evidence, policy_version) VALUES ('acme/m', 'alpha', :since, :until, 1,"
                    " 'failed 2 rounds in a row', '[7, 8]', 'p-old')"
                ),
                {"since": at(NOW), "until": at(until)},
            )
        assert store.upgrade() == head_revision()
        states = store.load_states("acme/m")
        alpha, beta = states["alpha"], states["beta"]
        assert alpha.causes == (ALL_CONTRACTS,) and alpha.quarantined(NOW)
        # rounds 7 and 8 are not stored: looks of kind round whose start is unknown (0011)
        assert alpha.recovery_streak == 1
        assert alpha.recovery_evidence == (Look.round(7, None), Look.round(8, None))
        assert alpha.streaks == () and alpha.version == 4
        assert alpha.next_language == "pt" and alpha.next_language_since == NOW
        assert beta.streaks == () and beta.causes == () and beta.failing_streak == 0
        assert beta.recovery_evidence == () and beta.recovery_streak == 0
        [q] = store.quarantines("acme/m")
        assert q.causes == (ALL_CONTRACTS,) and q.withheld_at is None
    finally:
        store.dispose()
