"""A maintenance window end to end: real rounds against the simulator on a virtual clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from drill_kit import MODEL, drill, fault, provider, rounds_of, scenario, verdicts
from sqlite_template import migrated_sqlite

from canary.core.model import NOTIFY_KINDS
from canary.rounds.drill import DRILL_START
from canary.store.repository import Store

INTERVAL = timedelta(minutes=30)


@pytest.mark.slow  # four rounds; the window's rule is tests/core's
def test_a_failing_provider_in_maintenance_for_two_rounds_is_judged_again_from_its_end(
    tmp_path: Path,
) -> None:
    url = migrated_sqlite(tmp_path / "drill.db")
    end = DRILL_START + 2 * INTERVAL  # rounds 1 and 2 fall inside; round 3 starts at its end
    with Store(url) as store:
        store.add_maintenance(MODEL, "delta", "planned upgrade", "cli:ops", end, DRILL_START)
    fleet = scenario(
        *(provider(t) for t in ("alpha", "bravo", "charlie")),
        provider("delta", fault("garbage_prefix")),  # a stray fragment before every answer
    )
    result = drill(fleet, 4, database_url=url)
    assert verdicts(result, "delta") == ["fail"] * 4  # probed and recorded all along
    # the window's two failing rounds counted for nothing: rounds 3 and 4 quarantine it
    assert rounds_of(result, "quarantine", "delta") == [4]
    assert [e["round"] for e in result.events if e.get("provider") == "delta"
            and e["event"] != "verdict"] == [4]  # fmt: skip
    with Store(url) as store:
        sent = store.pending_notifications(end + 4 * INTERVAL, 100, NOTIFY_KINDS)
        # the window's opening (an operator's action), then nothing until the quarantine
        assert [(r.event, r.tag, r.round_id is None) for r in sent] == [
            ("maintenance_added", "delta", True),
            ("quarantine", "delta", False),
        ]
        assert [h.verdict for h in store.history(MODEL, "delta", 10)] == ["fail"] * 4


def test_a_provider_leaving_the_listing_in_its_window_alerts_nobody(tmp_path: Path) -> None:
    url = migrated_sqlite(tmp_path / "drill.db")
    with Store(url) as store:
        store.add_maintenance(MODEL, "echo", "moving", "cli:ops", DRILL_START + 4 * INTERVAL,
                              DRILL_START)  # fmt: skip
    fleet = scenario(
        *(provider(t) for t in ("alpha", "bravo", "charlie", "delta", "echo")),
        timeline=[{"round": 2, "model": MODEL, "provider": t, "remove": True}
                  for t in ("delta", "echo")],
    )  # fmt: skip
    result = drill(fleet, 2, database_url=url)
    vanished = {e["provider"]: e["alert"] for e in result.of_kind("drift")}
    assert vanished == {"delta": True, "echo": False}  # recorded both; only delta alerts
    with Store(url) as store:
        sent = store.pending_notifications(DRILL_START + 2 * INTERVAL, 100, NOTIFY_KINDS)
        assert [(r.event, r.tag) for r in sent] == [
            ("maintenance_added", "echo"),
            ("drift", "delta"),
        ]
