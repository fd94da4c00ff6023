"""A whole round against a misbehaving upstream: it finishes, is recorded, every verdict is a
transport error, and nothing moves toward quarantine (transport problems freeze the count)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlite_template import migrated_sqlite
from upstream import Misbehaviour, UpstreamThread, listing
from wire_server import chunk, sse

from canary.config.settings import ModelSettings, OpenRouterSettings, Settings
from canary.core.model import Verdict
from canary.core.plan import slot_of
from canary.openrouter.client import OpenRouterClient
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import Wiring, build_wiring

KEY = "sk-or-v1-ROUNDKEY-0123456789"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HTML = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
BAD: dict[str, Misbehaviour] = {
    "html-502": Misbehaviour(502, "text/html", HTML, chunked=False),
    "html-200": Misbehaviour(200, "text/html", HTML),
    "cut": Misbehaviour(body=sse(chunk("Olá, "), chunk("tudo"), done=False)[:-7], ending="cut"),
    "truncated": Misbehaviour(body=sse(chunk("Hello "), chunk("there"), done=False)),
    "hang": Misbehaviour(before_head="hang"),
    "stall": Misbehaviour(body=sse(chunk("Hel"), done=False), ending="hang"),
    "garbage": Misbehaviour(body=bytes(range(256)) * 8, piece=100),
    "badjson": Misbehaviour(
        body=sse(chunk("Hi"), "data: {'not': json}\n\n", chunk(None, finish="stop"))
    ),
    "huge": Misbehaviour(body=b"data: " + b"x" * 1_500_000, piece=65536),
    "json-200": Misbehaviour(200, "application/json", b'{"id": "gen-1"}', chunked=False),
    "ratelimit": Misbehaviour(
        429,
        "application/json",
        json.dumps({"error": {"code": 429, "message": "Rate limit exceeded"}}).encode(),
        chunked=False,
        headers={"Retry-After": "30"},
    ),
    "reset": Misbehaviour(before_head="cut"),
}


@pytest.fixture(scope="module")
def up() -> Iterator[UpstreamThread]:
    with UpstreamThread() as server:
        for tag, behaviour in BAD.items():
            server.add(behaviour, key=tag)
        yield server


def settings_for(up: UpstreamThread, tmp: Path, model: str) -> Settings:
    return Settings(
        database_url=migrated_sqlite(tmp / "canary.db"),
        mode="enforce",
        languages=("en", "pt"),
        ttft_samples=2,
        ttft_threshold_s=1.0,  # at most the first-token timeout, which is short here
        concurrency=16,
        models=(ModelSettings(id=model, capacity_floor=1),),
        openrouter=OpenRouterSettings(
            base_url=up.base_url,
            api_key=KEY,
            connect_timeout_s=2.0,
            first_token_timeout_s=1.0,
            stream_timeout_s=2.0,
            listing_deadline_s=1.0,
        ),
    )


def run_round(wiring: Wiring, at: datetime) -> ModelRound:
    o = wiring.settings.openrouter

    async def go() -> list[ModelRound]:
        async with OpenRouterClient(
            o.base_url,
            o.api_key.get_secret_value(),
            connect_timeout_s=o.connect_timeout_s,
            first_token_timeout_s=o.first_token_timeout_s,
            stream_timeout_s=o.stream_timeout_s,
            listing_deadline_s=o.listing_deadline_s,
            max_stream_bytes=1_000_000,
        ) as client:
            runner = RoundRunner(wiring, client, clock=lambda: at)
            return await runner.run(scheduled_at=slot_of(at, wiring.settings.interval_minutes))

    (report,) = asyncio.run(go())
    return report


@pytest.mark.slow
def test_rounds_against_a_misbehaving_upstream_finish_and_quarantine_nothing(
    up: UpstreamThread, tmp_path: Path
) -> None:
    model = "acme/chaos"
    up.add_listing("chaos", listing(model, {tag: tag.title() for tag in BAD}))
    wiring = build_wiring(settings_for(up, tmp_path, model))
    try:
        for k in range(2):  # two consecutive rounds: as many as a quarantine needs
            report = run_round(wiring, START + timedelta(minutes=30 * k))
            assert report.status == "finished"
            assert set(report.verdicts) == set(BAD)
            verdicts: dict[str, Any] = {t: v.verdict for t, v in report.verdicts.items()}
            assert verdicts == dict.fromkeys(BAD, Verdict.transport_error)
            kinds = {e.kind.value for e in report.events}
            assert not kinds & {"quarantine", "would_quarantine", "floor_held", "model_wide"}
        store = wiring.store
        rounds = store.recent_rounds(model)
        assert [r.status for r in rounds] == ["finished"] * 2
        assert store.quarantines(model, active_only=False) == []
        states = store.load_states(model)
        assert all(s.failing_streak == 0 and s.quarantined_until is None for s in states.values())
        probes = store.probes(rounds[0].id)
        transports = {tag: {p.transport for p in probes if p.tag == tag} for tag in BAD}
        assert transports["hang"] == {"timeout"} and transports["stall"] == {"timeout"}
        assert transports["ratelimit"] == {"rate_limited"}
        for tag in ("html-502", "html-200", "cut", "truncated", "garbage", "badjson", "huge"):
            assert transports[tag] == {"provider_error"}, tag
        assert all(p.error for p in probes)
        assert not [p for p in probes if KEY in (p.error or "")]
    finally:
        wiring.store.dispose()


@pytest.mark.parametrize(
    "behaviour",
    [
        Misbehaviour(502, "text/html", HTML, chunked=False),
        Misbehaviour(before_head="hang"),
        Misbehaviour(200, "application/json", b"[" * 50_000, chunked=False),
        Misbehaviour(200, "application/json", b'{"data": {"endpoints": 7}}', chunked=False),
        Misbehaviour(
            401, "application/json", b'{"error": {"code": 401, "message": "no"}}', chunked=False
        ),
    ],
    ids=["html-502", "hang", "deep-json", "not-a-listing", "unauthorised"],
)
def test_a_broken_listing_abandons_the_round_cleanly(
    up: UpstreamThread, tmp_path: Path, behaviour: Misbehaviour
) -> None:
    slug = f"broken-{len(up.cases)}"
    up.add(behaviour, key=slug)
    model = f"acme/{slug}"
    wiring = build_wiring(settings_for(up, tmp_path, model))
    try:
        report = run_round(wiring, START)
        assert report.status == "abandoned" and report.verdicts == {}
        (row,) = wiring.store.recent_rounds(model)
        assert row.status == "abandoned" and row.finished_at is not None
        assert wiring.store.quarantines(model, active_only=False) == []
        alerts = wiring.store.audit(model, events=["operator_alert"])
        if behaviour.status == 401:  # our key: the operators are told, with the round it ended
            [alert] = alerts
            assert alert.round_id == row.id and "listing" in alert.detail
            assert [e.kind.value for e in report.events] == ["operator_alert"]
        else:  # the provider side: nothing to raise
            assert alerts == []
    finally:
        wiring.store.dispose()


@pytest.mark.slow
def test_a_listing_with_overflowing_numbers_still_gives_a_round(
    up: UpstreamThread, tmp_path: Path
) -> None:
    model = "acme/overflow"
    raw = json.dumps(listing(model, {"hang": "Hang"}))
    raw = raw.replace('"context_length": 32768', '"context_length": 1e400')
    up.add_listing("overflow", json.loads(raw))
    wiring = build_wiring(settings_for(up, tmp_path, model))
    try:
        report = run_round(wiring, START)
        assert report.status == "finished"
        assert report.verdicts["hang"].verdict is Verdict.transport_error
    finally:
        wiring.store.dispose()


@pytest.mark.slow
def test_the_daemon_round_job_survives_a_misbehaving_upstream(
    up: UpstreamThread, tmp_path: Path
) -> None:
    from canary.service.daemon import Daemon

    model = "acme/daemon"
    up.add_listing("daemon", listing(model, {tag: tag.title() for tag in BAD}))
    daemon = Daemon(settings_for(up, tmp_path, model), holder="robustness-test")
    try:
        daemon.run_round()  # the scheduler's job: it must return, whatever the wire did
        # one round; two when it ran across a slot's start (on the real clock): the job then
        # runs the new slot's round at once
        rows = daemon.wiring.store.recent_rounds(model)
        assert 1 <= len(rows) <= 2
        for row in rows:
            assert row.status == "finished"
            verdicts = daemon.wiring.store.round_verdicts(row.id)
            assert {v.verdict for v in verdicts.values()} == {Verdict.transport_error}
        assert daemon.wiring.store.lease("round") is None  # released after the round
        assert not daemon.ignore.stale
    finally:
        daemon.notifier.close()
        daemon.wiring.store.dispose()
