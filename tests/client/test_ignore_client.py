"""IgnoreListClient against a real loopback HTTP server; merge_provider as a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from canary.client import IgnoreListClient, IgnoreListUnavailable, merge_provider

MODEL = "acme/roleplay-1"


def make(server: Any, clock: Any, cache: Path | None = None, **kw: Any) -> IgnoreListClient:
    return IgnoreListClient(
        server.base_url, MODEL, cache_path=cache, clock=clock, wall_clock=clock.wall, **kw
    )


def test_fetches_the_list_and_the_provider_object(server: Any, clock: Any) -> None:
    server.behaviour.ignore = ["bad-host", "drifty/fp4"]
    with make(server, clock) as client:
        assert client.get() == ["bad-host", "drifty/fp4"]
        assert client.provider() == {"ignore": ["bad-host", "drifty/fp4"]}
        assert client.stale is False
    assert server.behaviour.seen[0]["model"] == MODEL
    assert server.behaviour.seen[0]["path"] == "/v1/ignore-list"


def test_etag_304_reuses_the_list(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        assert client.get() == ["bad-host"]
    first, second = server.behaviour.seen
    assert first["if_none_match"] is None
    assert second["if_none_match"] is not None  # sent the ETag back; the server answered 304


def test_a_changed_list_replaces_the_old_one(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.ignore = ["bad-host", "new-bad"]
        assert client.get() == ["bad-host", "new-bad"]


def test_a_fresh_empty_list_is_legitimate(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.ignore = []  # every quarantine ended
        assert client.get() == []


@pytest.mark.parametrize(
    ("mode", "status"),
    [
        ("status", 500),
        ("status", 503),
        ("status", 404),
        ("garbage", 200),
        ("not_object", 200),
        ("wrong_model", 200),
    ],
)
def test_never_empty_on_an_error_answer(server: Any, clock: Any, mode: str, status: int) -> None:
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.mode, server.behaviour.status = mode, status
        server.behaviour.ignore = []
        clock.now += 60
        assert client.get() == ["bad-host"]
        assert client.last_error is not None
        assert client.stale is True


def test_never_empty_when_the_server_is_down_then_recovers(server: Any, clock: Any) -> None:
    with make(server, clock, retry_after_error_s=5) as client:
        assert client.get() == ["bad-host"]
        server.stop()  # connection refused
        assert client.get() == ["bad-host"]
        assert "ConnectError" in (client.last_error or "")
        server.behaviour.ignore = ["bad-host", "other"]
        server.start()  # same port
        requests_before = len(server.behaviour.seen)
        assert client.get() == ["bad-host"]  # still backing off: no request yet
        assert len(server.behaviour.seen) == requests_before
        clock.now += 5
        assert client.get() == ["bad-host", "other"]
        assert client.last_error is None


def test_timeout_keeps_the_last_good_list(server: Any, clock: Any) -> None:
    with make(server, clock, timeout_s=0.2) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.mode = "hang"  # the server accepts the request and never answers
        clock.now += 60
        assert client.get() == ["bad-host"]
        assert "Timeout" in (client.last_error or "")


def test_stale_empty_list_does_not_replace_a_good_one(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        server.behaviour.ignore, server.behaviour.stale = [], True
        assert client.get() == ["bad-host"]
        assert client.last_error is not None


def test_stale_older_list_does_not_roll_back_a_newer_one(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        server.behaviour.generated_at = "2026-11-29T12:00:00+00:00"
        server.behaviour.ignore = ["a", "b"]
        assert client.get() == ["a", "b"]
        server.behaviour.generated_at = "2026-11-29T11:00:00+00:00"
        server.behaviour.ignore, server.behaviour.stale = ["a"], True
        clock.now += 60
        assert client.get() == ["a", "b"]


def test_stale_list_is_accepted_when_nothing_better_is_held(server: Any, clock: Any) -> None:
    server.behaviour.stale = True
    with make(server, clock) as client:
        assert client.get() == ["bad-host"]
        assert client.stale is True


def test_raises_only_when_there_never_was_a_good_list(server: Any, clock: Any) -> None:
    server.behaviour.mode = "status"
    with make(server, clock) as client, pytest.raises(IgnoreListUnavailable, match="HTTP 500"):
        client.get()


def test_raises_when_unreachable_from_the_start(server: Any, clock: Any) -> None:
    server.stop()
    with make(server, clock) as client:
        with pytest.raises(IgnoreListUnavailable) as info:
            client.get()
        assert isinstance(info.value, RuntimeError)
        assert info.value.model == MODEL


def test_list_persists_on_disk_across_instances(server: Any, clock: Any, tmp_path: Path) -> None:
    cache = tmp_path / "sub" / "ignore.json"
    server.behaviour.ignore = ["bad-host", "slow-host"]
    with make(server, clock, cache) as client:
        assert client.get() == ["bad-host", "slow-host"]
    assert json.loads(cache.read_text())["ignore"] == ["bad-host", "slow-host"]
    assert [p.name for p in cache.parent.iterdir()] == ["ignore.json"]  # no temp file left
    server.stop()
    with make(server, clock, cache) as restarted:  # the server is down: the disk copy is used
        assert restarted.get() == ["bad-host", "slow-host"]


def test_etag_from_disk_is_sent_after_a_restart(server: Any, clock: Any, tmp_path: Path) -> None:
    cache = tmp_path / "ignore.json"
    with make(server, clock, cache) as client:
        client.get()
    with make(server, clock, cache) as restarted:
        assert restarted.get() == ["bad-host"]
    assert server.behaviour.seen[-1]["if_none_match"] == json.loads(cache.read_text())["etag"]


def test_an_error_does_not_overwrite_the_disk_copy(server: Any, clock: Any, tmp_path: Path) -> None:
    cache = tmp_path / "ignore.json"
    with make(server, clock, cache) as client:
        client.get()
        saved = cache.read_text()
        server.behaviour.mode = "garbage"
        clock.now += 60
        client.get()
    assert cache.read_text() == saved


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"format": 1, "model": "other/model", "ignore": ["x"]}',
        '{"format": 1, "model": "acme/roleplay-1", "ignore": "x"}',
        "[]",
    ],
)
def test_an_unusable_disk_copy_is_ignored(
    server: Any, clock: Any, tmp_path: Path, content: str
) -> None:
    cache = tmp_path / "ignore.json"
    cache.write_text(content)
    server.stop()
    with make(server, clock, cache) as client, pytest.raises(IgnoreListUnavailable):
        client.get()


def test_cache_control_max_age_is_honoured(server: Any, clock: Any) -> None:
    server.behaviour.cache_control = "max-age=30"
    with make(server, clock) as client:
        client.get()
        client.get()
        assert len(server.behaviour.seen) == 1
        clock.now += 31
        client.get()
        assert len(server.behaviour.seen) == 2


def test_returned_lists_are_copies(server: Any, clock: Any) -> None:
    with make(server, clock) as client:
        client.get().append("mutated")
        server.behaviour.cache_control = "max-age=30"
        assert client.get() == ["bad-host"]


MERGE_CASES = [
    (None, ["a"], {"ignore": ["a"]}),
    ({}, [], {"ignore": []}),
    ({"sort": "price", "zdr": True}, ["a"], {"sort": "price", "zdr": True, "ignore": ["a"]}),
    ({"ignore": ["x", "a"]}, ["a", "b", "b"], {"ignore": ["x", "a", "b"]}),
    ({"ignore": ("x",), "order": ["y"]}, ["z"], {"ignore": ["x", "z"], "order": ["y"]}),
]  # fmt: skip


@pytest.mark.parametrize(("given", "ignore", "expected"), MERGE_CASES)
def test_merge_provider(
    given: dict[str, Any] | None, ignore: list[str], expected: dict[str, Any]
) -> None:
    before = json.dumps(given, default=list)
    assert merge_provider(given, ignore) == expected
    assert json.dumps(given, default=list) == before  # the input is not modified


def test_merge_provider_rejects_a_string_ignore() -> None:
    with pytest.raises(TypeError):
        merge_provider({"ignore": "bad-host"}, ["a"])


def test_unknown_needs_are_refused_when_the_client_is_made(server: Any, clock: Any) -> None:
    from canary.client import KNOWN_NEEDS, UnknownNeed
    from canary.core.needs import KNOWN_NEEDS as CORE_NEEDS

    assert KNOWN_NEEDS == CORE_NEEDS  # the helper's copy of the core's list
    with pytest.raises(UnknownNeed, match=r"unknown need\(s\) vision \(known: structured_outputs, "
                       r"tools\)"):  # fmt: skip
        make(server, clock, needs=["tools", "vision"])
    with pytest.raises(TypeError, match="not the string 'tools'"):
        make(server, clock, needs="tools")
    assert server.behaviour.seen == []  # refused before any request
    with make(server, clock, needs=[" tools", "structured_outputs", "tools"]) as client:
        assert client.needs == "structured_outputs,tools"
