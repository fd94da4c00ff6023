"""Store contract, rounds and evidence: the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from builders import result, round_of
from builders import ttft as first_token
from builders import verdict as build_verdict

from canary.core.model import (
    Contract,
    Endpoint,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Transport,
    Usage,
    Verdict,
)
from canary.core.stats import latency_bucket
from canary.store import DriftChange, Store, UnknownRound

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _verdict(
    model: str, tag: str, verdict: Verdict = Verdict.passed, *, ttft: float = 1.2
) -> RoundVerdict:
    failed = verdict is Verdict.fail
    language = result(
        Contract.language,
        Result.fail if failed else Result.passed,
        "es in 4/6 sentences of a pt answer",
        sample="Olá",
        reason="language_drift",
        language="pt",
        language_anomaly=failed,
    )
    return build_verdict(
        model,
        tag,
        verdict,
        first_token(ttft),
        language,
        language_anomaly_in="pt" if failed else None,
    )


def test_a_round_is_claimed_once(store: Store, model: str) -> None:
    first = store.claim_round(model, T0, "runner-a", "p-1", {"ttft": "abc"})
    again = store.claim_round(model, T0, "runner-b", "p-1", {})
    later = store.claim_round(model, T0 + timedelta(minutes=30), "runner-b", "p-1", {})
    assert isinstance(first, int)
    assert again is None
    assert isinstance(later, int) and later != first
    rows = store.recent_rounds(model, 10)
    assert [r.runner_id for r in rows] == ["runner-b", "runner-a"]
    assert rows[1].checksums == {"ttft": "abc"} and rows[1].status == "running"


def test_finish_round_records_cost_and_skipped(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {}, started_at=T0)
    assert round_id is not None
    assert store.last_finished_round_at(model) is None
    store.finish_round(
        round_id,
        "finished",
        cost_usd=0.012,
        skipped=[{"provider": "beta", "reason": "budget"}],
        at=T0 + timedelta(minutes=2),
    )
    row = round_of(store, round_id)
    assert row.status == "finished" and row.cost_usd == pytest.approx(0.012)
    assert row.skipped == ({"provider": "beta", "reason": "budget"},)
    finished = store.last_finished_round_at(model)
    assert finished == T0 + timedelta(minutes=2) and finished.tzinfo is not None
    with pytest.raises(ValueError, match="finished or abandoned"):
        store.finish_round(round_id, "running")
    with pytest.raises(UnknownRound):
        store.finish_round(10**9, "finished")


def test_stale_running_rounds_are_abandoned(store: Store, model: str) -> None:
    old = store.claim_round(model, T0, "dead", "p-1", {}, started_at=T0)
    fresh = store.claim_round(
        model, T0 + timedelta(hours=1), "alive", "p-1", {}, started_at=T0 + timedelta(hours=1)
    )
    assert old is not None and fresh is not None
    assert store.abandon_stale_rounds(T0 + timedelta(minutes=30), now=T0 + timedelta(hours=1)) >= 1
    assert round_of(store, old).status == "abandoned"
    assert round_of(store, fresh).status == "running"


def test_observations_are_stored_with_a_short_sample_and_retries_do_not_duplicate(
    store: Store, model: str
) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    assert round_id is not None
    obs = [
        Observation(
            Contract.ttft,
            "alpha",
            Transport.ok,
            language="en",
            ttft_s=0.8,
            total_s=3.0,
            content="x" * 500,
            usage=Usage(10, 20, 0.001),
            checksum="c1",
            nonce="n1",
            served_by="Alpha",
            finish_reason="stop",
        ),
        Observation(
            Contract.ttft,
            "beta",
            Transport.timeout,
            language="en",
            error="first token timeout",
            nonce="n2",
        ),
    ]
    assert store.record_observations(round_id, model, obs, T0) == 2
    assert store.record_observations(round_id, model, obs, T0) == 0  # a retried write
    store.finish_round(round_id, "finished", at=T0)
    probes = store.probes(round_id)
    assert [p.tag for p in probes] == ["alpha", "beta"]
    assert len(probes[0].sample) == 200 and probes[0].cost_usd == pytest.approx(0.001)
    assert probes[0].at == T0 and probes[1].transport == "timeout"
    assert store.spend(T0 - timedelta(seconds=1), model) == pytest.approx(0.001)
    assert store.spend(T0 + timedelta(seconds=1), model) == 0.0
    day, week = store.ttft_histograms_of([model], T0, T0)[model]
    assert day == week == {"alpha": {latency_bucket(0.8): (1, 0.8)}}  # counted once


def test_a_stall_is_stored_censored_and_counted_at_the_timeout(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    assert round_id is not None
    stall = Observation(
        Contract.refusal,
        "alpha",
        Transport.timeout,
        status=200,
        error="stalled: the stream opened but sent no token within 30 s",
        ttft_s=30.0,
        ttft_censored=True,
        nonce="n1",
    )
    fast = Observation(Contract.ttft, "alpha", Transport.ok, ttft_s=0.8, nonce="n2")
    store.record_observations(round_id, model, [stall, fast], T0)
    store.finish_round(round_id, "finished", at=T0)
    assert [(p.ttft_s, p.ttft_censored) for p in store.probes(round_id)] == [
        (30.0, True),
        (0.8, False),
    ]
    day, _ = store.ttft_histograms_of([model], T0, T0)[model]
    assert day == {"alpha": {latency_bucket(30.0): (1, 30.0), latency_bucket(0.8): (1, 0.8)}}


def _timed(tag: str, ttft_s: float, nonce: str, *, attributed: bool = True) -> Observation:
    return Observation(
        Contract.ttft,
        tag,
        Transport.ok,
        ttft_s=ttft_s,
        nonce=nonce,
        served_by=None if attributed else "elsewhere",
        attribution_ok=attributed,
    )


def test_latency_histograms_add_up_per_hour_and_split_the_windows(store: Store, model: str) -> None:
    old = T0 - timedelta(days=2)
    for at, samples in (
        (old, [1.0, 1.001]),
        (T0, [1.0, 3.0]),
        (T0 + timedelta(minutes=30), [1.005, 2.0]),
    ):
        rid = store.claim_round(model, at, "r", "p-1", {})
        assert rid is not None
        obs = [_timed("alpha", s, f"{rid}-{i}") for i, s in enumerate(samples)]
        obs.append(_timed("beta", 9.0, f"{rid}-x", attributed=False))  # another host answered
        store.record_observations(rid, model, obs, at)
        store.finish_round(rid, "finished", at=at)
    one = latency_bucket(1.0)
    day, week = store.ttft_histograms_of([model], T0 + timedelta(minutes=45), old)[model]
    # the day window starts at the hour of its bound: both rounds of 12:xx are in it
    assert day == {
        "alpha": {one: (2, 1.005), latency_bucket(3.0): (1, 3.0), latency_bucket(2.0): (1, 2.0)}
    }
    assert week["alpha"][one] == (4, 1.005) and sum(n for n, _ in week["alpha"].values()) == 6
    assert store.ttft_recent(model, T0, 3) == {"alpha": [3.0, 1.005, 2.0]}


def test_latency_figures_follow_each_finished_round_and_never_an_abandoned_one(
    store: Store, model: str
) -> None:
    """The figures operators read are the histograms' as of the model's latest finished round:
    each window ends there; an abandoned attempt changes nothing."""
    rounds = (
        (T0 - timedelta(days=8), "finished", [30.0]),  # out of both windows by T0
        (T0 - timedelta(hours=30), "finished", [4.0, 5.0]),  # in the week only
        (T0, "finished", [1.0, 2.0, 3.0]),
        (T0 + timedelta(minutes=30), "abandoned", [90.0]),
    )
    figures = {}
    for at, status, samples in rounds:
        rid = store.claim_round(model, at, "r", "p-1", {})
        assert rid is not None
        store.record_observations(
            rid, model, [_timed("alpha", v, f"{rid}-{i}") for i, v in enumerate(samples)], at
        )
        store.finish_round(rid, status, at=at)
        figures[status, at] = store.latency_figures_of([model])[model]["alpha"]
    latest = figures["finished", T0]
    assert latest["24h"].as_dict() == {"p50": 2.0, "p95": 3.0, "p99": 3.0, "n": 3}
    assert latest["7d"].as_dict() == {"p50": 3.0, "p95": 5.0, "p99": 5.0, "n": 5}
    assert latest["24h"].at == latest["7d"].at == T0
    assert figures["finished", T0 - timedelta(days=8)]["24h"].n == 1
    assert figures["abandoned", T0 + timedelta(minutes=30)] == latest


def test_verdict_writes_are_idempotent_per_round_and_endpoint(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    assert round_id is not None
    verdicts = {"alpha": _verdict(model, "alpha"), "beta": _verdict(model, "beta", Verdict.fail)}
    store.record_verdicts(round_id, model, verdicts)
    store.record_verdicts(round_id, model, verdicts)  # retried
    assert store.round_verdicts(round_id) == verdicts
    history = store.history(model, "beta", 10)
    assert len(history) == 1 and len(history[0].results) == 2
    assert history[0].verdict == "fail" and history[0].language_anomaly_in == "pt"


def test_history_and_latest_results_follow_the_rounds(store: Store, model: str) -> None:
    r1 = store.claim_round(model, T0, "r", "p-1", {})
    r2 = store.claim_round(model, T0 + timedelta(minutes=30), "r", "p-1", {})
    assert r1 is not None and r2 is not None
    store.record_verdicts(r1, model, {"alpha": _verdict(model, "alpha", Verdict.fail, ttft=9.0)})
    store.record_verdicts(r2, model, {"alpha": _verdict(model, "alpha", ttft=2.0)})
    history = store.history(model, "alpha", 10)
    assert [(h.round_id, h.verdict) for h in history] == [(r2, "pass"), (r1, "fail")]
    assert history[0].at == T0 + timedelta(minutes=30)
    latest = store.latest_results_of([model])[model]
    assert set(latest) == {"alpha"}
    assert latest["alpha"]["ttft"].figure == 2.0 and latest["alpha"]["ttft"].round_id == r2
    assert latest["alpha"]["language"].result == "pass"


def test_history_says_each_round_status_and_marks_extra_rounds(store: Store, model: str) -> None:
    scheduled = store.claim_round(model, T0, "r", "p-1", {})
    extra = store.claim_round(model, T0 + timedelta(minutes=5), "r", "p-1", {}, extra=True)
    dropped = store.claim_round(model, T0 + timedelta(minutes=30), "r", "p-1", {})
    running = store.claim_round(model, T0 + timedelta(minutes=60), "r", "p-1", {})
    assert None not in (scheduled, extra, dropped, running)
    for rid in (scheduled, extra, dropped, running):
        assert rid is not None
        store.record_verdicts(rid, model, {"alpha": _verdict(model, "alpha")})
    assert scheduled is not None and extra is not None and dropped is not None
    store.finish_round(scheduled, "finished")
    store.finish_round(extra, "finished", detail={"extra": True})
    store.finish_round(dropped, "abandoned")
    history = store.history(model, "alpha", 10)
    assert [(h.round_id, h.round_status, h.extra) for h in history] == [
        (running, "running", False),
        (dropped, "abandoned", False),
        (extra, "finished", True),
        (scheduled, "finished", False),
    ]


def test_snapshots_and_drift(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    endpoints = [
        Endpoint(model, "alpha", "Alpha", Pricing(2e-7, 6e-7), ("max_tokens",), quantization="fp8"),
        Endpoint(model, "beta", "Beta", Pricing(1e-7, 3e-7), quantization="int4"),
    ]
    store.record_snapshots(round_id, model, endpoints, T0)
    store.record_snapshots(round_id, model, endpoints, T0)  # retried: replaced, not doubled
    store.record_snapshots(None, model, endpoints[:1], T0 + timedelta(hours=1))
    latest = store.latest_snapshot(model)
    assert set(latest) == {"alpha"} and latest["alpha"]["quantization"] == "fp8"
    assert model in store.known_models() and store.known_tags(model) == ["alpha", "beta"]
    ids = store.record_drift(
        round_id, model, [DriftChange("alpha", "quantization", "fp8", "int4", alert=True)], T0
    )
    rows = store.drift(model, T0)
    assert (
        [r.id for r in rows] == ids
        and rows[0].old == "fp8"
        and rows[0].new == "int4"
        and rows[0].alert
    )
    assert store.drift(model, T0 + timedelta(seconds=1)) == []


def test_datetimes_come_back_aware_and_in_utc(store: Store, model: str) -> None:
    plus_five = timezone(timedelta(hours=5, minutes=30))
    local = T0.astimezone(plus_five)
    round_id = store.claim_round(model, local, "r", "p-1", {}, started_at=local)
    assert round_id is not None
    row = round_of(store, round_id)
    assert row.scheduled_at == T0 and row.scheduled_at.tzinfo == UTC
    assert row.started_at.utcoffset() == timedelta(0)


def test_naive_datetimes_are_refused(store: Store, model: str) -> None:
    with pytest.raises(Exception, match="naive datetime"):
        store.claim_round(model, T0.replace(tzinfo=None), "r", "p-1", {})


def test_a_rounds_probes_keep_their_instant_in_utc_and_refuse_a_naive_time(
    store: Store, model: str
) -> None:
    round_id = store.claim_round(model, T0, "r", "p-1", {})
    assert round_id is not None
    later = (T0 + timedelta(seconds=1)).astimezone(timezone(timedelta(hours=-5)))
    probe = Observation(Contract.ttft, "alpha", Transport.ok, ttft_s=0.4125, nonce="n1")
    assert store.record_observations(round_id, model, [probe], later) == 1
    (stored,) = store.probes(round_id)
    assert stored.at == T0 + timedelta(seconds=1) and stored.at.tzinfo == UTC
    assert stored.ttft_s == 0.4125 and stored.attribution_ok is True
    assert store.spend(T0 + timedelta(seconds=1), model) == 0.0  # compared as instants in SQL
    with pytest.raises(Exception, match="naive datetime"):
        store.record_observations(
            round_id, model, [replace(probe, nonce="n2")], T0.replace(tzinfo=None)
        )
