"""The rules every helper shares: what canary says of its capacity, entries' ends, the list's age,
everything excluded, and how failures are reported. Against the loopback server, clocks moved by
hand."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from canary_client import (
    Entry,
    EverythingExcluded,
    HeldList,
    IgnoreListClient,
    IgnoreListUnavailable,
)

MODEL = "acme/roleplay-1"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY = 24 * 3600


def make(server: Any, clock: Any, cache: Path | None = None, **kw: Any) -> IgnoreListClient:
    return IgnoreListClient(
        server.base_url, MODEL, cache_path=cache, clock=clock, wall_clock=clock.wall, **kw
    )


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "canary_client" and r.levelno == logging.WARNING
    ]


def held(ignore: tuple[str, ...], *entries: tuple[str, datetime | None]) -> HeldList:
    return HeldList(
        model=MODEL, ignore=ignore, entries=tuple(Entry(t, "quarantine", u) for t, u in entries),
        usable_endpoints=3, floor_breached=False, stale=False, generated_at=None,
        policy_version=None, etag=None, as_of=T0,
    )  # fmt: skip


H = timedelta(hours=1)
APPLIED_CASES = [
    (held(("a",), ("a", T0 + H)), ("a",)),  # not ended yet
    (held(("a",), ("a", T0 - H)), ()),  # ended: never applied
    (held(("a",), ("a", T0)), ()),  # ends at now: ended
    (held(("a",), ("a", None)), ("a",)),  # open-ended
    (held(("a",), ("a", T0 - H), ("a", None)), ("a",)),  # a second entry still holds it
    (held(("a",), ("a", T0 - H), ("a", T0 + H)), ("a",)),
    (held(("a", "b")), ("a", "b")),  # no entries sent: every tag applies
    (held(("b", "a"), ("a", T0 - H), ("b", T0 + H)), ("b",)),  # order kept
]  # fmt: skip


@pytest.mark.parametrize(("given", "applied"), APPLIED_CASES)
def test_a_tag_whose_entries_have_all_ended_is_not_applied(
    given: HeldList, applied: tuple[str, ...]
) -> None:
    assert given.applied(T0) == applied


def test_floor_breached_and_usable_endpoints_come_from_canary(server: Any, clock: Any) -> None:
    server.behaviour.usable, server.behaviour.floor_breached = 1, True
    with make(server, clock) as client:
        assert client.floor_breached is None and client.usable_endpoints is None  # nothing yet
        assert client.get() == ["bad-host"]
        assert client.floor_breached is True
        assert client.usable_endpoints == 1
        assert client.stale is False


def test_an_entry_past_its_until_is_dropped_without_asking_canary(server: Any, clock: Any) -> None:
    server.behaviour.ignore = ["bad-host", "other"]
    server.behaviour.until = {"bad-host": "2026-11-29T13:00:00Z"}
    server.behaviour.cache_control = "max-age=86400"
    with make(server, clock) as client:
        assert client.get() == ["bad-host", "other"]
        clock.now += 3600  # 13:00: its quarantine ends; the list held still names it
        assert client.get() == ["other"]
    assert len(server.behaviour.seen) == 1


def test_a_list_older_than_max_stale_s_is_dropped(
    server: Any, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with make(server, clock, retry_after_error_s=5) as client:
        assert client.get() == ["bad-host"]
        server.stop()
        clock.now += DAY  # exactly max_stale_s: still held
        assert client.get() == ["bad-host"]
        clock.now += 1
        with pytest.raises(IgnoreListUnavailable, match="older than 1 day"):
            client.get()
        assert client.held is None
    assert sum("dropped" in m for m in warnings(caplog)) == 1


def test_a_list_canary_keeps_confirming_never_ages(server: Any, clock: Any) -> None:
    with make(server, clock, max_stale_s=60) as client:
        for _ in range(5):
            assert client.get() == ["bad-host"]  # each a 304: canary says it is current
            clock.now += 50
    assert [s["if_none_match"] is not None for s in server.behaviour.seen] == [False] + [True] * 4


def test_a_stale_list_ages_from_canarys_last_good_read(server: Any, clock: Any) -> None:
    """canary serving its last good list marked stale: its age counts from that list's
    ``generated_at``, not from when the app got it."""
    server.behaviour.stale = True  # generated_at 10:00, two hours before the wall clock
    with make(server, clock, max_stale_s=3 * 3600) as client:
        assert client.get() == ["bad-host"]
        clock.now += 3600 + 1
        with pytest.raises(IgnoreListUnavailable):
            client.get()


def test_a_disk_copy_older_than_max_stale_s_is_not_used(
    server: Any, clock: Any, tmp_path: Path
) -> None:
    cache = tmp_path / "ignore.json"
    with make(server, clock, cache) as client:
        client.get()
    server.stop()
    clock.now += DAY - 60
    with make(server, clock, cache) as restarted:
        assert restarted.get() == ["bad-host"]
    clock.now += 120
    with make(server, clock, cache) as later, pytest.raises(IgnoreListUnavailable):
        later.get()


def test_everything_excluded_sends_no_ignore_and_warns_once(
    server: Any, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server.behaviour.ignore, server.behaviour.usable = ["alpha", "bravo"], 0
    with make(server, clock) as client:
        assert client.get() == []
        assert client.provider() == {"ignore": []}
        assert client.usable_endpoints == 0
        assert [m for m in warnings(caplog) if "every endpoint" in m] == [
            f"canary's list for {MODEL} excludes every endpoint; sending no ignore for it"
        ]
        server.behaviour.usable = 1  # one is back: the list applies again
        assert client.get() == ["alpha", "bravo"]


def test_everything_excluded_can_raise(server: Any, clock: Any) -> None:
    server.behaviour.ignore, server.behaviour.usable = ["alpha", "bravo"], 0
    with make(server, clock, everything_excluded="raise") as client:
        with pytest.raises(EverythingExcluded) as info:
            client.get()
        assert info.value.ignore == ("alpha", "bravo")
    with pytest.raises(ValueError, match="everything_excluded"):
        make(server, clock, everything_excluded="ignore")


def test_an_ended_entry_means_not_everything_is_excluded(server: Any, clock: Any) -> None:
    server.behaviour.ignore, server.behaviour.usable = ["alpha", "bravo"], 0
    server.behaviour.until = {"alpha": "2026-11-29T11:00:00Z"}  # ended an hour ago
    with make(server, clock, everything_excluded="raise") as client:
        assert client.get() == ["bravo"]


def test_failure_warnings_come_at_most_once_a_minute_with_the_real_count(
    server: Any, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with make(server, clock, retry_after_error_s=5) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.mode = "status"
        for _ in range(13):  # one failed request every 5 s for a minute
            clock.now += 5
            assert client.get() == ["bad-host"]
    assert len(server.behaviour.seen) == 14
    assert warnings(caplog) == [
        f"ignore list for {MODEL} not refreshed: HTTP 500 from the ignore-list endpoint "
        f"({n} failed attempts since the last warning); keeping the last good list of 1 entries"
        for n in (1, 12)
    ]


def test_a_failure_with_nothing_held_says_so(
    server: Any, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server.behaviour.mode = "status"
    with make(server, clock) as client, pytest.raises(IgnoreListUnavailable):
        client.get()
    (message,) = warnings(caplog)
    assert message.endswith("; no list held")
