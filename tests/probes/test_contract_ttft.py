"""judge_ttft: a table of rounds and what the latency contract makes of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from canary.core.contracts.ttft import judge_ttft, ttft_look
from canary.core.model import Contract, Observation, Result, Transport

Obs = Callable[..., Observation]


def _sample(obs: Obs, ttft: float | None, transport: Transport = Transport.ok) -> Observation:
    content = "" if ttft is None else "Welcome, traveller."
    return obs(Contract.ttft, transport=transport, ttft_s=ttft, content=content, language="en")


@pytest.mark.parametrize(
    ("ttfts", "expected"),
    [
        ([1.0, 2.0, 1.5], Result.passed),
        ([12.0, 1.0, 2.0], Result.passed),  # one slow answer never fails it
        ([12.0, 14.0, 2.0], Result.fail),  # most slow
        ([12.0, 14.0, 20.0], Result.fail),
        ([12.0, 2.0], Result.passed),  # half is not most
        ([10.0, 10.0, 10.0], Result.passed),  # at the threshold is not over it
        ([12.0], Result.inconclusive),  # one sample is too few
        ([None, None, 1.0], Result.inconclusive),  # empty answers are not latency samples
        ([None, None], Result.inconclusive),
    ],
)
def test_table(obs: Obs, ttfts: list[float | None], expected: Result) -> None:
    result = judge_ttft([_sample(obs, t) for t in ttfts], threshold_s=10)
    assert result.contract is Contract.ttft
    assert result.result is expected, result.detail


def test_detail_names_figure_and_rule(obs: Obs) -> None:
    result = judge_ttft([_sample(obs, t) for t in (12.4, 13.0, 2.0)], threshold_s=10)
    assert result.detail.startswith("2/3 samples over 10 s (median 12.4 s)")
    assert result.figure == pytest.approx(12.4)
    assert result.sample == "Welcome, traveller."
    assert result.reason == "slow"


def test_transport_only_is_transport_error_naming_the_classes(obs: Obs) -> None:
    observations = [
        _sample(obs, None, Transport.timeout),
        _sample(obs, None, Transport.timeout),
        _sample(obs, None, Transport.rate_limited),
    ]
    result = judge_ttft(observations, threshold_s=10)
    assert result.result is Result.transport_error
    assert "2 timeout" in result.detail and "1 rate_limited" in result.detail
    assert result.reason == "timeout"


def test_first_token_timeout_is_not_a_slow_sample(obs: Obs) -> None:
    observations = [
        _sample(obs, None, Transport.timeout),
        _sample(obs, None, Transport.timeout),
        _sample(obs, 1.0),
        _sample(obs, 2.0),
    ]
    result = judge_ttft(observations, threshold_s=10)
    assert result.result is Result.passed
    assert result.detail.startswith("0/2 samples over 10 s")
    assert "2 probe(s) not sampled" in result.detail


def test_attribution_mismatch_is_not_a_sample(obs: Obs) -> None:
    wrong = obs(Contract.ttft, ttft_s=30.0, content="x", attribution_ok=False, served_by="Other")
    result = judge_ttft([wrong, _sample(obs, 1.0), _sample(obs, 1.2)], threshold_s=10)
    assert result.result is Result.passed
    alone = judge_ttft([wrong], threshold_s=10)
    assert alone.result is Result.transport_error
    assert "attribution_mismatch" in alone.detail


def test_no_observation_is_inconclusive(obs: Obs) -> None:
    assert judge_ttft([], threshold_s=10).result is Result.inconclusive


def _stall(obs: Obs, contract: Contract = Contract.ttft, at: float = 30.0) -> Observation:
    return obs(
        contract,
        transport=Transport.timeout,
        status=200,
        ttft_s=at,
        ttft_censored=True,
        error=f"stalled: the stream opened but sent no token within {at:g} s",
        language="en",
    )


def test_a_stalled_stream_is_a_slow_sample_counted_at_the_timeout(obs: Obs) -> None:
    result = judge_ttft([_stall(obs), _stall(obs), _sample(obs, 1.0)], threshold_s=10)
    assert result.result is Result.fail
    assert result.reason == "stalled"
    assert result.detail.startswith(
        "2/3 samples over 10 s (median 30.0 s); 2 stalled (stream open, no token), counted at 30 s"
    )
    alone = judge_ttft([_stall(obs)] * 3, threshold_s=10)  # nothing completed, still evidence
    assert alone.result is Result.fail and alone.figure == 30.0


def test_a_stall_on_any_probe_is_one_slow_sample(obs: Obs) -> None:
    round_ = [
        _sample(obs, 1.0),
        _sample(obs, 1.2),
        _sample(obs, 12.0),
        _stall(obs, Contract.refusal),
    ]
    result = judge_ttft(round_, threshold_s=10)
    assert result.result is Result.passed  # 2 slow of 4: one slow answer never fails it
    assert result.detail.startswith("2/4 samples over 10 s")
    round_.append(_stall(obs, Contract.language))
    assert judge_ttft(round_, threshold_s=10).result is Result.fail  # 3 of 5


def test_another_providers_stall_is_not_a_sample(obs: Obs) -> None:
    wrong = replace(_stall(obs), attribution_ok=False, served_by="Other")
    result = judge_ttft([wrong, _sample(obs, 1.0), _sample(obs, 1.2)], threshold_s=10)
    assert result.detail.startswith("0/2 samples over 10 s")


@pytest.mark.parametrize(
    ("observation", "result"),
    [
        ("stall", Result.fail),
        (12.0, Result.fail),
        (1.0, Result.passed),
        (None, Result.inconclusive),  # a completed answer without content
        ("timeout", Result.inconclusive),  # the stream never opened
    ],
)
def test_a_recheck_sample_is_slow_or_not(obs: Obs, observation: object, result: Result) -> None:
    if observation == "stall":
        o = _stall(obs)
    elif observation == "timeout":
        o = _sample(obs, None, Transport.timeout)
    else:
        o = _sample(obs, observation)  # type: ignore[arg-type]
    assert ttft_look(o, threshold_s=10).result is result


@pytest.mark.parametrize("at", [10.0, 9.5])
def test_a_stall_is_slow_whatever_the_value_it_was_cut_at(obs: Obs, at: float) -> None:
    """first_token_timeout_s == ttft_threshold_s: a host stalling on every request is cut at
    exactly the threshold (or, by a shorter stream deadline, before it) and still fails."""
    every = judge_ttft([_stall(obs, at=at)] * 3, threshold_s=10)
    assert every.result is Result.fail and every.reason == "stalled"
    assert every.detail.startswith("3/3 samples over 10 s")
    mixed = judge_ttft([_stall(obs, at=at), _stall(obs, at=at), _sample(obs, 1.0)], threshold_s=10)
    assert mixed.result is Result.fail
    assert ttft_look(_stall(obs, at=at), threshold_s=10).result is Result.fail
