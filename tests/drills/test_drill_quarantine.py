"""The quarantine rules end to end: real rounds against the simulator on a virtual clock."""

from __future__ import annotations

import pytest
from drill_kit import (
    advance,
    drill,
    fault,
    faults_at,
    ignored,
    provider,
    rounds_of,
    scenario,
    verdicts,
)

HEALTHY = [provider("alpha"), provider("bravo"), provider("charlie")]
PREFIX = fault("garbage_prefix")  # a stray fragment before every answer: hygiene fails


def test_fault_starting_at_round_k_quarantines_at_k_plus_1_never_at_k() -> None:
    result = drill(
        scenario(*HEALTHY, provider("delta"), timeline=[faults_at(3, "delta", PREFIX)]),
        4,
    )
    assert verdicts(result, "delta") == ["pass", "pass", "fail", "fail"]
    assert rounds_of(result, "quarantine") == [4]
    (quarantine,) = result.of_kind("quarantine")
    assert quarantine["provider"] == "delta"
    assert quarantine["days"] == 1.0 and quarantine["step"] == 1
    assert len(quarantine["evidence"]) == 2  # the round ids of rounds 3 and 4
    assert ignored(result) == ["delta"]


# A 429 is a transport error as a 503 is (tests/e2e/test_fault_judgement.py) and any transport
# error freezes the count (tests/core/test_core_quarantine.py): `make test` drills it too
@pytest.mark.parametrize("status", [503, pytest.param(429, marks=pytest.mark.slow)])
def test_transport_error_round_freezes_the_count(status: int) -> None:
    result = drill(
        scenario(
            *HEALTHY,
            provider("delta", PREFIX),
            timeline=[
                faults_at(2, "delta", fault("http_error", status=status, retry_after=0)),
                faults_at(3, "delta", PREFIX),
            ],
        ),
        3,
    )
    assert verdicts(result, "delta") == ["fail", "transport_error", "fail"]
    # fail, transport, fail: the transport round neither advanced nor reset the streak
    assert rounds_of(result, "quarantine", "delta") == [3]
    (quarantine,) = result.of_kind("quarantine")
    first, last = quarantine["evidence"]
    assert last["id"] - first["id"] == 2  # rounds 1 and 3; round 2 is not evidence
    assert first["kind"] == last["kind"] == "round" and first["at"] < last["at"]
    assert "2 rounds in a row" in quarantine["reason"]


def test_two_clean_rounds_release_a_quarantine_early() -> None:
    result = drill(
        scenario(*HEALTHY, provider("delta", PREFIX), timeline=[faults_at(3, "delta")]),
        5,
    )
    assert verdicts(result, "delta") == ["fail", "fail", "pass", "pass", "pass"]
    assert rounds_of(result, "quarantine", "delta") == [2]
    assert rounds_of(result, "release", "delta") == [4]  # after the 2nd clean round, not the 1st
    (release,) = result.of_kind("release")
    assert release["why"] == "recovered"
    assert len(release["evidence"]) == 2
    assert release["at"] < release["until"]  # early: before the planned end
    assert ignored(result) == []


@pytest.mark.slow  # five quarantines over weeks of rounds; the ladder is
# tests/core/test_core_quarantine.py's
def test_repeat_offender_climbs_the_1_3_7_day_ladder() -> None:
    # A persistent fault; each advance lands just after the running quarantine has ended.
    result = drill(
        scenario(
            *HEALTHY,
            provider("delta", PREFIX),
            timeline=[advance(3, 24), advance(5, 72), advance(7, 168)],
        ),
        8,
    )
    quarantines = result.of_kind("quarantine")
    assert [q["round"] for q in quarantines] == [2, 4, 6, 8]
    assert [q["days"] for q in quarantines] == [1.0, 3.0, 7.0, 7.0]
    assert [q["step"] for q in quarantines] == [1, 2, 3, 4]
    releases = result.of_kind("release")
    assert [(r["round"], r["why"]) for r in releases] == [
        (3, "expired"),
        (5, "expired"),
        (7, "expired"),
    ]
    # after an expiry the endpoint must fail two rounds in a row again: never straight back
    assert rounds_of(result, "quarantine") == [2] + [r + 1 for r in rounds_of(result, "release")]
    assert ignored(result) == ["delta"]


@pytest.mark.slow  # the rule is tests/core/test_core_quarantine.py's; the ladder's state
# across rounds is drilled above (1, 3, 7 days) in make check
def test_ladder_restarts_at_one_day_after_14_quiet_days() -> None:
    result = drill(
        scenario(
            *HEALTHY,
            provider("delta", PREFIX),
            timeline=[advance(3, 24), advance(5, 14 * 24)],
        ),
        6,
    )
    quarantines = result.of_kind("quarantine")
    assert [q["round"] for q in quarantines] == [2, 4, 6]
    # 2nd: one day after the 1st started -> 3 days; 3rd: 14 days after the 2nd started -> 1 day
    assert [q["days"] for q in quarantines] == [1.0, 3.0, 1.0]
    assert [q["step"] for q in quarantines] == [1, 2, 1]
