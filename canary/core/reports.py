"""Apps' reports of what they saw: the symptoms and the contracts each names, whom a report
blames, how fast reports may come, and what a focused check they start may count. Pure.

A report is never evidence. It starts a focused check: the model's endpoints probed at once for
the contracts its symptom names, judged as a round is (:func:`canary.core.verdict.judge_round`:
the positive controls, the model-wide rule). Of that look only the confirmed failures count
(:func:`failures_only`): one failing look each, under the round's gap rule; its passes change
nothing, so reports can neither bring a quarantine nor delay one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from enum import StrEnum

from canary.core.model import (
    Contract,
    EndpointState,
    LookKind,
    Result,
    RoundVerdict,
    Verdict,
)


class Symptom(StrEnum):
    slow_first_token = "slow_first_token"
    refusal = "refusal"
    empty = "empty"
    filtered = "filtered"
    cut_short = "cut_short"
    broken_json = "broken_json"
    wrong_language = "wrong_language"
    mixed_language = "mixed_language"
    garbled_text = "garbled_text"
    stray_tokens = "stray_tokens"
    repetition = "repetition"
    bad_tool_call = "bad_tool_call"
    other = "other"


_NAMED: dict[Contract, tuple[Symptom, ...]] = {
    Contract.ttft: (Symptom.slow_first_token,),
    Contract.refusal: (Symptom.refusal, Symptom.empty, Symptom.filtered, Symptom.cut_short),
    Contract.schema: (Symptom.broken_json,),
    Contract.language: (Symptom.wrong_language, Symptom.mixed_language, Symptom.garbled_text),
    Contract.hygiene: (Symptom.stray_tokens, Symptom.repetition),
    Contract.tools: (Symptom.bad_tool_call,),
}
SYMPTOM_CONTRACTS: dict[Symptom, tuple[Contract, ...]] = {
    **{s: (c,) for c, symptoms in _NAMED.items() for s in symptoms},
    Symptom.other: tuple(Contract),
}


class Outcome(StrEnum):
    pending = "pending"  # its focused check has not ended yet
    confirmed = "confirmed"  # the check confirmed a failure of a reported endpoint
    not_confirmed = "not_confirmed"
    model_wide = "model_wide"  # the contract failed on most endpoints: the model, not a host
    unattributed = "unattributed"  # no endpoint could be named (the reason says why)
    in_maintenance = "in_maintenance"  # stored; no check starts
    rate_limited = "rate_limited"  # over the per-endpoint limit: stored, no check
    over_budget = "over_budget"  # the day's budget could not pay the check


def contracts_of(symptom: Symptom) -> tuple[Contract, ...]:
    return SYMPTOM_CONTRACTS[symptom]


def endpoints_named(name: str, listing: Mapping[str, str | None]) -> tuple[str, ...]:
    """The tags a provider name matches in a listing (tag -> display name): the tag itself, its
    provider slug (``deepinfra`` names ``deepinfra`` and ``deepinfra/fp8``), or the display name
    answers carry (``DeepInfra``). Several matches are several reported endpoints; none is
    none (never a guess)."""
    wanted = name.strip().lower()
    return tuple(
        sorted(
            tag
            for tag, display in listing.items()
            if wanted in (tag.lower(), tag.split("/")[0].lower(), (display or "").lower())
        )
    )


def retry_after(
    recent: Iterable[datetime], now: datetime, limit: int, window: timedelta
) -> float | None:
    """Seconds to wait before one more may come, when ``limit`` already came within ``window``
    before ``now``; None when it may come now."""
    inside = sorted(t for t in recent if now - t < window)
    if len(inside) < limit:
        return None
    return max((inside[-limit] + window - now).total_seconds(), 1.0)


def admission(
    tags: Collection[str],
    recent: Iterable[datetime],
    now: datetime,
    limit: int,
    window: timedelta,
    maintained: Collection[str],
) -> tuple[Outcome, float | None]:
    """What becomes of a report once it names its endpoints (``tags``), before any check,
    whether the app named the provider or canary resolved it: ``rate_limited`` (and the seconds
    to wait) when ``limit`` reports on those endpoints came within ``window`` before ``now``
    (``recent``); ``in_maintenance`` when every one is in a maintenance window in force
    (``maintained``); else ``pending``, a check to come."""
    if not tags:
        return Outcome.pending, None
    wait = retry_after(recent, now, limit, window)
    if wait is not None:
        return Outcome.rate_limited, wait
    if set(tags) <= set(maintained):
        return Outcome.in_maintenance, None
    return Outcome.pending, None


def joins(
    tags: Collection[str],
    contracts: Collection[str],
    checked: Collection[str],
    looked_at: Collection[str],
) -> bool:
    """Whether a pending report is settled by a focused check that is ending: it names endpoints,
    every one among those the check looked at (``looked_at``: the reported, the usable, the
    controls), and a contract the check probed (``checked``). So a report that came while the
    check ran is answered by it; one the check did not look at waits for the next."""
    return bool(tags) and set(tags) <= set(looked_at) and not set(contracts).isdisjoint(checked)


def failures_only(verdict: RoundVerdict, contracts: Collection[str]) -> RoundVerdict:
    """What a focused check's verdict may count: its confirmed failures of ``contracts``
    (after the round-level rules), nothing else. No failure leaves a verdict without results,
    which moves no count, no recovery and no pending language."""
    fails = tuple(
        r for r in verdict.results if r.result is Result.fail and r.contract.value in contracts
    )
    kind = Verdict.fail if fails else Verdict.inconclusive
    return replace(verdict, verdict=kind, results=fails, language_anomaly_in=None)


def report_outcome(
    reported: Collection[str],
    contracts: Collection[str],
    verdicts: Mapping[str, RoundVerdict],
    model_wide: Collection[str],
    unpaid: Collection[str] = (),
) -> Outcome:
    """A focused check's answer to one report: over budget when every reported endpoint went
    unprobed for the budget (``unpaid``); confirmed when a reported endpoint failed one of its
    contracts; model-wide when the rule took a contract off every host; else not confirmed."""
    if reported and set(reported) <= set(unpaid):
        return Outcome.over_budget
    for tag in reported:
        verdict = verdicts.get(tag)
        if verdict is not None and failures_only(verdict, contracts).results:
            return Outcome.confirmed
    if any(c in model_wide for c in contracts):
        return Outcome.model_wide
    return Outcome.not_confirmed


def second_looks(
    states: Iterable[EndpointState], now: datetime, gap: timedelta
) -> dict[Contract, tuple[str, ...]]:
    """The contracts due a second focused check, with their endpoints: one failing look so far,
    a focused one, at least ``gap`` ago, and no quarantine yet."""
    due: dict[Contract, list[str]] = {}
    for state in states:
        if state.quarantined(now):
            continue
        for streak in state.streaks:
            last = streak.evidence[-1] if streak.evidence else None
            if (
                streak.count == 1
                and last is not None
                and last.kind is LookKind.focused
                and last.at is not None
                and now - last.at >= gap
            ):
                due.setdefault(streak.contract, []).append(state.tag)
    return {c: tuple(sorted(tags)) for c, tags in sorted(due.items())}


def focus_order(reported: Sequence[str], usable: Iterable[str]) -> list[str]:
    """The endpoints a focused check probes: the reported ones first, then every usable one."""
    return list(dict.fromkeys([*reported, *sorted(usable)]))
