"""Equality tests: is an endpoint's model the one its peers serve? Pure; the RNG is passed in.

Each endpoint's completions are compared with the pooled completions of its peers (the model's
other usable endpoints) prompt by prompt: a Maximum Mean Discrepancy over a Hamming kernel on
word positions (Gao, Liang and Guestrin, "Model Equality Testing", ICLR 2025), with a
permutation p-value. Known-answer items (temperature 0) give a second signal: an endpoint whose
accuracy is far below its peers' (a one-sided Fisher exact test) fails too. Both p-values of
every tested endpoint of a model, combined (Bonferroni), form one family under Benjamini-Hochberg
at the check's level.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from operator import eq, itemgetter

from canary.core.budget import day_start
from canary.core.identity import Listed, excluded_by, named_tags
from canary.core.model import Exclusion
from canary.core.plan import next_slot

PAD = "\x00"  # a position past a completion's end: equal only to another ended completion


class Outcome(StrEnum):
    passed = "pass"
    fail = "fail"
    inconclusive = "inconclusive"


@dataclass(frozen=True)
class EqualitySettings:
    """What a check runs with (recorded with each result)."""

    level: float = 0.01  # the false-discovery rate across a model's endpoints
    positions: int = 16  # the words of a completion the kernel compares
    permutations: int = 1999  # at most; fewer when the p-value is clearly large
    stop_after: int = 20  # exceedances that end the permutations early (Besag and Clifford)
    min_peers: int = 3
    min_share: float = 0.8  # of the planned completions, for an endpoint to count as sampled
    pool_per_prompt: int = 30  # the peers' pool is subsampled to at most this many per prompt


@dataclass(frozen=True)
class Sampled:
    """One endpoint's answers: completions per prompt, and known-answer items right/asked."""

    tag: str
    completions: Mapping[str, Sequence[str]]  # prompt id -> completions
    known_right: int = 0
    known_asked: int = 0
    pooled: bool = True  # usable: its answers may join the peers' reference


@dataclass(frozen=True)
class EndpointEquality:
    tag: str
    outcome: Outcome
    p_value: float | None = None  # the MMD's permutation p-value
    known_p_value: float | None = None
    effect: float | None = None  # the MMD squared, mean over prompts (0: alike, at most 1)
    peers: int = 0
    samples: int = 0
    accuracy: float | None = None
    peer_accuracy: float | None = None
    reason: str = ""
    examples: tuple[str, ...] = field(default=())


def words(text: str, positions: int) -> tuple[str, ...]:
    """The first ``positions`` words of a completion, padded."""
    head = text.split()[:positions]
    return tuple(head) + (PAD,) * (positions - len(head))


def hamming(x: Sequence[str], y: Sequence[str]) -> float:
    """The share of positions where two padded word sequences agree."""
    matches: int = sum(map(eq, x, y))
    return matches / len(x)


def _kernel(items: Sequence[tuple[str, ...]]) -> list[list[float]]:
    """The Hamming kernel of every pair (:func:`hamming`, inlined: this is the hot loop)."""
    n = len(items)
    k = [[0.0] * n for _ in range(n)]
    for i, x in enumerate(items):
        k[i][i] = 1.0
        row = k[i]
        size = len(x)
        for j in range(i + 1, n):
            row[j] = k[j][i] = sum(map(eq, x, items[j])) / size
    return k


class _Prompt:
    """One prompt's kernel over the endpoint's samples (the first ``n``) then the pool's."""

    def __init__(self, k: list[list[float]], n: int) -> None:
        self.k, self.n, self.size = k, n, len(k)
        self.rows = [sum(row) for row in k]
        self.total = sum(self.rows)

    def mmd(self, chosen: Sequence[int]) -> float:
        """The biased MMD squared with ``chosen`` as the endpoint's samples. Only the chosen
        block is summed: the pool's follows from the row sums and the total."""
        n, m = self.n, self.size - self.n
        pick = itemgetter(*chosen)
        if n == 1:
            return self._single(chosen[0])
        xx: float = sum(map(sum, map(pick, pick(self.k))))  # the chosen block, summed in C
        rows: float = sum(pick(self.rows))
        xy = rows - xx
        yy = self.total - 2 * rows + xx
        return xx / n**2 + yy / m**2 - 2 * xy / (n * m)

    def _single(self, i: int) -> float:
        m = self.size - 1
        xy = self.rows[i] - 1.0
        return 1.0 + (self.total - 2 * self.rows[i] + 1.0) / m**2 - 2 * xy / m


def mmd_test(
    own: Mapping[str, Sequence[str]],
    pool: Mapping[str, Sequence[str]],
    rng: random.Random,
    settings: EqualitySettings = EqualitySettings(),
) -> tuple[float, float]:
    """(MMD squared averaged over the shared prompts, permutation p-value).

    Each permutation reshuffles every prompt's samples between the endpoint and the pool; the
    p-value is ``(1 + exceedances) / (1 + permutations)``, or, once ``stop_after`` exceedances
    are seen after ``l`` permutations, ``stop_after / l`` (Besag and Clifford 1991's sequential
    p-value, valid like the full one and much cheaper when the endpoint is like its peers)."""
    prompts: list[_Prompt] = []
    for pid in sorted(own):
        xs, ys = list(own[pid]), list(pool.get(pid, ()))
        if not xs or not ys:
            continue
        if len(ys) > settings.pool_per_prompt:
            ys = rng.sample(ys, settings.pool_per_prompt)
        items = [words(s, settings.positions) for s in xs + ys]
        prompts.append(_Prompt(_kernel(items), len(xs)))
    if not prompts:
        raise ValueError("no prompt has samples on both sides")
    observed = sum(p.mmd(range(p.n)) for p in prompts) / len(prompts)
    exceed = 0
    for done in range(1, settings.permutations + 1):
        stat = 0.0
        for p in prompts:
            stat += p.mmd(rng.sample(range(p.size), p.n))
        if stat / len(prompts) >= observed - 1e-12:
            exceed += 1
            if exceed >= settings.stop_after:
                return observed, exceed / done
    return observed, (1 + exceed) / (1 + settings.permutations)


def fisher_lower(right: int, asked: int, peer_right: int, peer_asked: int) -> float:
    """One-sided Fisher exact p-value that the endpoint's accuracy is below its peers'.

    P(X <= right) for X hypergeometric: ``asked`` draws from ``asked + peer_asked`` items of
    which ``right + peer_right`` are right. Written out because no dependency of canary has it
    (scipy is not one) and it is four lines of ``math.comb``."""
    total, good = asked + peer_asked, right + peer_right
    denominator = math.comb(total, asked)
    low = max(0, asked - (total - good))
    tail = sum(
        math.comb(good, x) * math.comb(total - good, asked - x) for x in range(low, right + 1)
    )
    return min(1.0, tail / denominator)


def benjamini_hochberg(p_values: Sequence[float], level: float) -> list[bool]:
    """Which hypotheses Benjamini-Hochberg rejects at false-discovery rate ``level``."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    m = len(p_values)
    cut = 0
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= level * rank / m:
            cut = rank
    rejected = [False] * m
    for i in order[:cut]:
        rejected[i] = True
    return rejected


def combined(p_mmd: float, p_known: float | None) -> float:
    """One endpoint's p-value of its two tests (Bonferroni): each endpoint is one hypothesis of
    the model's family."""
    return p_mmd if p_known is None else min(1.0, 2 * min(p_mmd, p_known))


def enough(sampled: Sampled, planned: int, settings: EqualitySettings) -> bool:
    """Did the endpoint answer enough of its planned completions to be compared?"""
    got = sum(len(c) for c in sampled.completions.values())
    return planned > 0 and got >= settings.min_share * planned


def judge_equality(
    endpoints: Sequence[Sampled],
    planned: int,
    rng: random.Random,
    settings: EqualitySettings = EqualitySettings(),
) -> tuple[EndpointEquality, ...]:
    """Each endpoint against the pool of its usable, sufficiently sampled peers, in passes.

    ``planned``: the completions asked of each endpoint. An endpoint with too few answers, or
    fewer than ``min_peers`` peers with enough, is inconclusive. Each tested endpoint's two
    p-values make one (:func:`combined`); Benjamini-Hochberg across the tested endpoints fails
    those it rejects. A pooled endpoint that fails sits in its peers' pools and drags them
    towards itself, so its healthy peers can fail beside it: the strongest such outlier is left
    out of every pool and all are judged again (a fresh family), while a pass fails a pooled
    endpoint not yet left out and enough peers would remain. The last pass decides. When the
    first pass fails nobody there is no other pass, so with every endpoint alike the chance of
    any failure stays that of one Benjamini-Hochberg family."""
    ready = [e for e in endpoints if enough(e, planned, settings)]
    pooled = [e for e in ready if e.pooled]
    left_out: list[str] = []
    done: dict[tuple[str, frozenset[str]], _Tested] = {}
    while True:
        results = _judge_pass(endpoints, ready, pooled, left_out, done, rng, settings)
        pool_size = len(pooled) - len(left_out)
        new = [
            r
            for r in results
            if r.outcome is Outcome.fail
            and r.tag not in left_out
            and any(p.tag == r.tag for p in pooled)
        ]
        if not new or pool_size - 1 < settings.min_peers + 1:
            return results
        left_out.append(min(new, key=_strength).tag)


def _strength(r: EndpointEquality) -> tuple[float, float]:
    """The order in which outliers are left out: the smallest p-value, then the largest effect
    (p-values floor at 1 / (permutations + 1), so strong outliers often tie)."""
    return combined(r.p_value or 1.0, r.known_p_value), -(r.effect or 0.0)


@dataclass(frozen=True)
class _Tested:
    effect: float
    p_mmd: float
    p_known: float | None
    peer_right: int
    peer_asked: int


def _judge_pass(
    endpoints: Sequence[Sampled],
    ready: Sequence[Sampled],
    pooled: Sequence[Sampled],
    left_out: Sequence[str],
    done: dict[tuple[str, frozenset[str]], _Tested],
    rng: random.Random,
    settings: EqualitySettings,
) -> tuple[EndpointEquality, ...]:
    """One pass: every endpoint against its pooled peers but those ``left_out``, one
    Benjamini-Hochberg family. ``done`` keeps the tests of earlier passes: an endpoint whose
    pool did not change is not tested again."""
    tested: list[tuple[Sampled, _Tested, int]] = []
    out: dict[str, EndpointEquality] = {}
    for e in endpoints:
        peers = [p for p in pooled if p.tag != e.tag and p.tag not in left_out]
        if e not in ready or len(peers) < settings.min_peers:
            why = "too few answers" if e not in ready else f"{len(peers)} peers with answers"
            out[e.tag] = EndpointEquality(
                e.tag, Outcome.inconclusive, peers=len(peers), reason=why + _without(e, left_out)
            )
            continue
        key = (e.tag, frozenset(p.tag for p in peers))
        if (test := done.get(key)) is None:
            test = done[key] = _test(e, peers, rng, settings)
        tested.append((e, test, len(peers)))
    family = [combined(t.p_mmd, t.p_known) for _, t, _ in tested]
    rejected = benjamini_hochberg(family, settings.level)
    for (e, test, count), fails in zip(tested, rejected, strict=True):
        known_worse = test.p_known is not None and test.p_known < test.p_mmd
        reason = ("known answers" if known_worse else "distribution") if fails else "like its peers"
        out[e.tag] = EndpointEquality(
            e.tag,
            Outcome.fail if fails else Outcome.passed,
            p_value=test.p_mmd,
            known_p_value=test.p_known,
            effect=test.effect,
            peers=count,
            samples=sum(len(c) for c in e.completions.values()),
            accuracy=e.known_right / e.known_asked if e.known_asked else None,
            peer_accuracy=test.peer_right / test.peer_asked if test.peer_asked else None,
            reason=reason + _without(e, left_out),
            examples=_examples(e.completions),
        )
    return tuple(out[e.tag] for e in endpoints)


def _without(e: Sampled, left_out: Sequence[str]) -> str:
    others = [tag for tag in left_out if tag != e.tag]
    return f"; {', '.join(others)} left out of the pool" if others else ""


def _test(
    e: Sampled, peers: Sequence[Sampled], rng: random.Random, settings: EqualitySettings
) -> _Tested:
    pool: dict[str, list[str]] = {}
    for p in peers:
        for pid, texts in p.completions.items():
            pool.setdefault(pid, []).extend(texts)
    effect, p_mmd = mmd_test(e.completions, pool, rng, settings)
    peer_right = sum(p.known_right for p in peers)
    peer_asked = sum(p.known_asked for p in peers)
    p_known = None
    if e.known_asked and peer_asked:
        p_known = fisher_lower(e.known_right, e.known_asked, peer_right, peer_asked)
    return _Tested(effect, p_mmd, p_known, peer_right, peer_asked)


def _examples(completions: Mapping[str, Sequence[str]], count: int = 3) -> tuple[str, ...]:
    """A few completions as evidence, one per prompt, shortened."""
    picked = [texts[0][:200] for _, texts in sorted(completions.items()) if texts]
    return tuple(picked[:count])


def rounds_left_today(now: datetime, interval_minutes: float) -> int:
    """The round slots that start after ``now`` and before the end of its UTC day."""
    end = day_start(now) + timedelta(days=1)
    return max(
        0, math.ceil((end - next_slot(now, interval_minutes)) / timedelta(minutes=interval_minutes))
    )


def equality_allowance(
    limit_usd: float | None, reserved_usd: float, rounds_left: int, round_usd: float
) -> float | None:
    """What an equality check may spend: rounds come first, so the day's budget less what is
    reserved already and the estimate of the day's remaining rounds (None: no budget)."""
    if limit_usd is None:
        return None
    return max(0.0, limit_usd - reserved_usd - rounds_left * round_usd)


def equality_roles(
    listed: Sequence[Listed],
    *,
    controls: Collection[str],
    windows: Sequence[Exclusion],
    entries: Sequence[Exclusion],
    quarantined: Collection[str],
    now: datetime,
) -> tuple[tuple[str, ...], frozenset[str]]:
    """The endpoints tested (every one but the positive ``controls`` and those in a maintenance
    window) and those of them pooled into their peers' reference: neither quarantined nor named
    by any of the published list's ``entries`` (withheld quarantines included)."""
    resting = named_tags(windows, listed, now) if windows else frozenset()
    tested = [e for e in listed if e.tag not in controls and e.tag not in resting]
    pooled = frozenset(
        e.tag for e in tested if e.tag not in quarantined and not excluded_by(entries, e, now)
    )
    return tuple(e.tag for e in tested), pooled
