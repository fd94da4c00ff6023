"""The equality statistics: kernel, exact test, false-discovery control, and the judgement."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from canary.core.equality import (
    EqualitySettings,
    Outcome,
    Sampled,
    benjamini_hochberg,
    equality_roles,
    fisher_lower,
    hamming,
    judge_equality,
    mmd_test,
    words,
)
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer

VOCAB = [f"w{i}" for i in range(12)]


def _draw(rng: random.Random, temperature: float, length: int = 8) -> str:
    """Words from a fixed Zipf-like distribution, sharpened by ``temperature``."""
    weights = [(1 / (i + 1)) ** (1 / temperature) for i in range(len(VOCAB))]
    return " ".join(rng.choices(VOCAB, weights, k=length))


def _endpoint(
    tag: str, rng: random.Random, *, temperature: float = 1.0, per: int = 10, prompts: int = 6
) -> Sampled:
    completions = {f"p{i}": [_draw(rng, temperature) for _ in range(per)] for i in range(prompts)}
    return Sampled(tag, completions, known_right=10, known_asked=10)


FAST = EqualitySettings()


def test_words_pad_and_the_hamming_kernel() -> None:
    assert words("a b", 4) == ("a", "b", "\x00", "\x00")
    assert hamming(words("a b c", 4), words("a x c d", 4)) == 0.5
    assert hamming(words("a", 2), words("a", 2)) == 1.0


def test_fisher_lower_matches_the_hypergeometric_by_hand() -> None:
    # none right of 10 while the peers got all 30: one table of C(40, 10)
    assert fisher_lower(0, 10, 30, 30) == pytest.approx(1 / math.comb(40, 10))
    assert fisher_lower(10, 10, 30, 30) == 1.0
    # 2 x 2 table [[1, 3], [3, 1]]: P(X <= 1) = (1 + 16) / 70
    assert fisher_lower(1, 4, 3, 4) == pytest.approx(17 / 70)


def test_benjamini_hochberg_step_up() -> None:
    # thresholds at 0.05: 0.0125, 0.025, 0.0375, 0.05; 0.03 passes at rank 3, so ranks 1..3
    assert benjamini_hochberg([0.01, 0.2, 0.03, 0.02], 0.05) == [True, False, True, True]
    assert benjamini_hochberg([0.5, 0.6], 0.05) == [False, False]
    assert benjamini_hochberg([], 0.05) == []


def test_mmd_tells_a_shifted_distribution_from_its_own() -> None:
    rng = random.Random(1)
    same = _endpoint("a", rng).completions
    pool = _endpoint("b", rng, per=30).completions
    shifted = _endpoint("c", rng, temperature=0.4).completions
    effect_same, p_same = mmd_test(same, pool, random.Random(2), FAST)
    effect_shift, p_shift = mmd_test(shifted, pool, random.Random(2), FAST)
    assert p_shift <= 0.01 < p_same
    assert effect_shift > effect_same >= 0


def test_mmd_needs_a_shared_prompt() -> None:
    with pytest.raises(ValueError):
        mmd_test({"p0": ["a"]}, {"p1": ["a"]}, random.Random(0))


def test_judge_fails_the_outlier_and_passes_its_peers() -> None:
    rng = random.Random(3)
    peers = [_endpoint(f"ok{i}", rng) for i in range(4)]
    odd = _endpoint("odd", rng, temperature=0.4)
    results = {r.tag: r for r in judge_equality([*peers, odd], 60, random.Random(4), FAST)}
    assert results["odd"].outcome is Outcome.fail
    assert results["odd"].reason == "distribution"
    assert results["odd"].examples and results["odd"].peers == 4
    assert all(results[p.tag].outcome is Outcome.passed for p in peers)


def test_known_answers_far_below_the_peers_fail() -> None:
    rng = random.Random(5)
    peers = [_endpoint(f"ok{i}", rng) for i in range(4)]
    broken = Sampled("broken", _endpoint("x", rng).completions, known_right=1, known_asked=10)
    result = judge_equality([*peers, broken], 60, random.Random(6), FAST)[-1]
    assert result.outcome is Outcome.fail and result.reason == "known answers"
    assert result.accuracy == 0.1 and result.peer_accuracy == 1.0


def test_too_few_peers_or_answers_is_inconclusive() -> None:
    rng = random.Random(7)
    three = [_endpoint(f"e{i}", rng) for i in range(3)]
    results = judge_equality(three, 60, random.Random(8), FAST)
    assert {r.outcome for r in results} == {Outcome.inconclusive}
    assert results[0].reason == "2 peers with answers"
    short = Sampled("short", {"p0": ["w1 w2"]})
    four = judge_equality([*three, short], 60, random.Random(8), FAST)
    assert four[-1].reason == "too few answers"
    assert all(r.outcome is Outcome.inconclusive for r in four)  # short is nobody's peer


def test_an_unpooled_endpoint_is_tested_but_never_a_peer() -> None:
    rng = random.Random(9)
    peers = [_endpoint(f"ok{i}", rng) for i in range(3)]
    quarantined = Sampled("q", _endpoint("q", rng, temperature=0.4).completions, pooled=False)
    results = {r.tag: r for r in judge_equality([*peers, quarantined], 60, random.Random(1), FAST)}
    assert results["q"].outcome is Outcome.fail and results["q"].peers == 3
    assert all(results[p.tag].peers == 2 for p in peers)  # q is not in their pool
    assert all(results[p.tag].outcome is Outcome.inconclusive for p in peers)


def test_calibration_identical_endpoints_rarely_fail() -> None:
    """A seeded, small version of the calibration bench: 5 identical endpoints per model,
    40 models, level 1 %: at most 1.5 % of the 200 endpoint-checks fail (the bench runs 4,000)."""
    rng = random.Random(11)
    checks = failures = 0
    p_values: list[float] = []
    for _ in range(40):
        model = [_endpoint(f"e{i}", rng, per=4, prompts=3) for i in range(5)]
        for r in judge_equality(model, 12, rng):
            checks += 1
            failures += r.outcome is Outcome.fail
            assert r.p_value is not None
            p_values.append(r.p_value)
    assert checks == 200
    assert failures / checks <= 0.015
    assert 0.35 < sum(p_values) / len(p_values) < 0.65  # about uniform under the null


def test_an_outlier_is_left_out_of_its_peers_pools_and_they_are_judged_again() -> None:
    """A strong outlier in the pool drags it towards itself: in one pass its healthy peers
    fail beside it (min_peers 4 leaves no room to leave anyone out); in passes they pass."""
    rng, cheap = random.Random(1), EqualitySettings(level=0.05, permutations=299)
    peers = [_endpoint(f"ok{i}", rng, per=30, prompts=3) for i in range(4)]
    odd = _endpoint("odd", rng, temperature=0.3, per=30, prompts=3)
    one_pass = judge_equality([*peers, odd], 90, random.Random(4), replace(cheap, min_peers=4))
    assert one_pass[-1].outcome is Outcome.fail
    assert sum(r.outcome is Outcome.fail for r in one_pass[:-1]) >= 2
    results = judge_equality([*peers, odd], 90, random.Random(4), cheap)
    assert results[-1].outcome is Outcome.fail and results[-1].peers == 4
    assert results[-1].reason == "distribution"
    for r in results[:-1]:
        assert r.outcome is Outcome.passed and r.peers == 3
        assert r.reason == "like its peers; odd left out of the pool"


def test_no_second_pass_without_a_failure_or_room_to_leave_one_out() -> None:
    rng = random.Random(2)
    alike = [_endpoint(f"ok{i}", rng) for i in range(5)]
    results = judge_equality(alike, 60, random.Random(3), FAST)
    assert all(r.outcome is Outcome.passed and r.peers == 4 for r in results)
    # four endpoints: leaving the outlier out would leave its peers two peers each
    odd = _endpoint("odd", rng, temperature=0.3)
    four = judge_equality([*alike[:3], odd], 60, random.Random(3), FAST)
    assert four[-1].outcome is Outcome.fail
    assert all(r.peers == 3 and "left out" not in r.reason for r in four)


def test_controls_and_windows_are_not_tested_quarantined_and_named_ones_are_not_pooled() -> None:
    now = datetime(2026, 5, 1, tzinfo=UTC)
    listed = [Listed(t) for t in ("alpha", "bravo", "charlie", "delta/fp8", "echo", "filter")]
    window = Exclusion("m", "echo", Layer.maintenance, "upgrade", until=now + timedelta(hours=1))
    entry = Exclusion("m", "delta", Layer.runtime, "operator")  # a slug names delta/fp8
    tested, pooled = equality_roles(
        listed, controls=("filter",), windows=[window], entries=[entry],
        quarantined={"bravo"}, now=now,
    )  # fmt: skip
    assert tested == ("alpha", "bravo", "charlie", "delta/fp8")
    assert pooled == {"alpha", "charlie"}
