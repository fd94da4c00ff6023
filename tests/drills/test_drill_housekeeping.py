"""Between rounds, the daemon's housekeeping releases a quarantine whose end has come (its
notification goes out then, not at the next round) and records what the floor does."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from drill_kit import MODEL, drill, fault, provider, rounds_of, scenario, settings

from canary.config.settings import ModelSettings
from canary.rounds.drill import DRILL_START
from canary.service.daemon import Daemon
from canary.store.repository import Store


def test_housekeeping_releases_an_ended_quarantine_before_any_round(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hk.db'}"
    fleet = scenario(
        *(provider(t) for t in ("alpha", "charlie", "delta")),
        provider("bravo", fault("garbage_prefix")),
    )
    result = drill(fleet, 2, database_url=url)
    assert rounds_of(result, "quarantine", "bravo") == [2]
    with Store(url) as store:
        [quarantine] = store.quarantines(MODEL)
    daemon = Daemon(settings(database_url=url, models=(ModelSettings(id=MODEL),)))
    try:
        daemon.keep_decisions(quarantine.until - timedelta(minutes=1))
        assert daemon.wiring.store.quarantines(MODEL)  # not yet over
        daemon.keep_decisions(quarantine.until + timedelta(minutes=1))
        store = daemon.wiring.store
        assert store.quarantines(MODEL) == []
        [release] = store.audit(MODEL, events=["release"])
        assert release.detail["why"] == "expired" and release.round_id is None
        assert release.id in {r.id for r in store.pending_notifications(
            quarantine.until + timedelta(minutes=2), 10, ["release"])}  # fmt: skip
        state = store.load_states(MODEL)["bravo"]
        assert state.quarantined_until is None and state.ladder_step == 1
        daemon.keep_decisions(quarantine.until + timedelta(minutes=2))
        assert len(store.audit(MODEL, events=["release"])) == 1  # once
    finally:
        daemon.wiring.store.dispose()


@pytest.mark.slow  # the max age is tests/core's; housekeeping is drilled by the release test
def test_housekeeping_drops_a_pending_language_older_than_the_max_age(tmp_path: Path) -> None:
    # After an outage longer than streak_max_age_hours, the next round must not repeat it.
    url = f"sqlite:///{tmp_path / 'lang.db'}"
    fleet = scenario(
        *(provider(t) for t in ("alpha", "charlie", "delta")),
        provider("bravo", fault("language_drift", to="pt")),
    )
    drill(fleet, 1, database_url=url)
    daemon = Daemon(settings(database_url=url, models=(ModelSettings(id=MODEL),)))
    try:
        store = daemon.wiring.store
        pending = store.load_states(MODEL)["bravo"]
        assert pending.next_language is not None and pending.next_language_since == DRILL_START
        daemon.keep_decisions(DRILL_START + timedelta(hours=6))  # the max age: still pending
        assert store.load_states(MODEL)["bravo"].next_language == pending.next_language
        daemon.keep_decisions(DRILL_START + timedelta(hours=6, minutes=1))
        state = store.load_states(MODEL)["bravo"]
        assert state.next_language is None and state.next_language_since is None
        assert store.audit(MODEL, events=["release"]) == []
    finally:
        daemon.wiring.store.dispose()
