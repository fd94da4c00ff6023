"""Contract results of one round of one model -> one verdict per endpoint.

Round-level rules run first, in this order, each in one function:

1. :func:`apply_positive_control` — the refusal probe must catch the known filtering host(s); a
   control missing from the listing makes the round's refusal results inconclusive.
2. :func:`apply_model_wide` — a contract failing on most usable endpoints blames the model or the
   probe, not a provider.

Then :func:`aggregate` turns each endpoint's (adjusted) results into its :class:`RoundVerdict`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from canary.core.events import ControlMissing, Event, ModelWide, ProbeWeak, ResultLine, VerdictEvent
from canary.core.model import (
    Contract,
    ContractResult,
    Look,
    Result,
    RoundVerdict,
    Verdict,
)
from canary.core.policy import PolicyRules

Results = dict[str, list[ContractResult]]

PROBE_WEAK = "probe_weak"
POSITIVE_CONTROL = "positive_control"
CONTROL_MISSING = "control_missing"
MODEL_WIDE = "model_wide"
MODEL_WIDE_MIN_JUDGED = 3  # usable endpoints judged conclusively before a contract is model-wide


@dataclass(frozen=True)
class RoundOutcome:
    verdicts: dict[str, RoundVerdict]  # tag -> verdict, for every endpoint that had results
    events: tuple[Event, ...]  # probe_weak / model_wide, at most one per rule and contract


def judge_round(
    model: str,
    results: Mapping[str, Sequence[ContractResult]],
    *,
    positive_controls: Collection[str],
    rules: PolicyRules,
    look: Look | None = None,
    listed: Collection[str] | None = None,
    usable: Collection[str] | None = None,
    maintenance: Collection[str] = (),
) -> RoundOutcome:
    """Apply the round-level rules to every endpoint's contract results, then aggregate.

    ``results`` maps each probed endpoint tag to its contract results of this round. Endpoints not
    probed at all (budget) are simply absent: they get no verdict here (the caller marks them
    skipped). ``listed``: the tags of this round's listing (controls are checked against it).
    ``usable``: the endpoints no published entry names (None: every endpoint with results), the
    only ones the model-wide rule counts (never a positive control, nor an endpoint in
    ``maintenance``: the tags in a maintenance window). ``look``, when given (the round), is the
    evidence of the events.
    """
    adjusted: Results = {tag: list(rs) for tag, rs in results.items()}
    controls = frozenset(positive_controls)
    evidence: tuple[Look, ...] = () if look is None else (look,)
    events: list[Event] = []
    missing = sorted(controls - set(listed)) if listed is not None else []
    if missing:
        adjusted, absent = apply_missing_control(model, adjusted, missing, evidence=evidence)
        events.extend(absent)
    else:
        adjusted, weak = apply_positive_control(model, adjusted, controls, evidence=evidence)
        events.extend(weak)
    counted = frozenset(adjusted if usable is None else usable) - frozenset(maintenance)
    adjusted, wide = apply_model_wide(model, adjusted, controls, rules, counted, evidence=evidence)
    events.extend(wide)
    verdicts = {tag: aggregate(model, tag, rs) for tag, rs in sorted(adjusted.items())}
    return RoundOutcome(verdicts=verdicts, events=tuple(events))


def _refusals(rs: Sequence[ContractResult]) -> list[ContractResult]:
    return [r for r in rs if r.contract is Contract.refusal]


def apply_positive_control(
    model: str,
    results: Results,
    controls: frozenset[str],
    *,
    evidence: tuple[Look, ...] = (),
) -> tuple[Results, list[Event]]:
    """A refusal probe that cannot catch the known filtering host is no evidence of health.

    Without named controls nothing changes. Otherwise:

    * a control's own refusal failure is expected: it becomes ``inconclusive`` (reason
      ``positive_control``, detail kept) so it never counts against the control;
    * the probe is *weak* this round when no control was probed for refusal, or when any probed
      control did not fail it (passed, inconclusive, transport error...). Then every other
      endpoint's conclusive refusal result (pass or fail) becomes ``inconclusive`` with reason
      ``probe_weak``, and one ``probe_weak`` event names the controls and what they returned.
    * when every probed control failed as expected, the other endpoints' results stand.
    """
    if not controls:
        return results, []
    seen = {
        tag: [r.result for r in _refusals(rs) if r.result is not Result.not_applicable]
        for tag, rs in results.items()
        if tag in controls
    }
    seen = {tag: outcomes for tag, outcomes in seen.items() if outcomes}
    passed_control = sorted(
        tag for tag, outcomes in seen.items() if any(o is not Result.fail for o in outcomes)
    )
    if not seen:
        why = "no positive control was probed for refusal"
    elif passed_control:
        shown = ", ".join(
            f"{tag} ({'/'.join(o.value for o in seen[tag])})" for tag in passed_control
        )
        why = f"positive control did not fail refusal: {shown}"
    else:
        why = ""
    out: Results = {}
    for tag, rs in results.items():
        out[tag] = [_adjust_refusal(r, tag in controls, why) for r in rs]
    if not why:
        return out, []
    event = ProbeWeak(
        model=model,
        why=why,
        controls={tag: tuple(o.value for o in seen.get(tag, [])) for tag in sorted(controls)},
        evidence=evidence,
    )
    return out, [event]


def apply_missing_control(
    model: str, results: Results, missing: Sequence[str], *, evidence: tuple[Look, ...] = ()
) -> tuple[Results, list[Event]]:
    """A positive control that is not in the listing cannot show the probe works: every refusal
    result of the round is inconclusive (reason ``control_missing``), and one event says so."""
    why = f"positive control(s) not in the listing: {', '.join(missing)}"
    out: Results = {
        tag: [
            replace(
                r,
                result=Result.inconclusive,
                reason=CONTROL_MISSING,
                detail=f"{why}; was {r.result.value}: {r.detail}",
            )
            if r.contract is Contract.refusal and r.result in (Result.passed, Result.fail)
            else r
            for r in rs
        ]
        for tag, rs in results.items()
    }
    event = ControlMissing(model=model, missing=tuple(missing), why=why, evidence=evidence)
    return out, [event]


def _adjust_refusal(r: ContractResult, is_control: bool, weak_why: str) -> ContractResult:
    if r.contract is not Contract.refusal:
        return r
    if is_control:
        if r.result is Result.fail:
            return replace(
                r,
                result=Result.inconclusive,
                reason=POSITIVE_CONTROL,
                detail=f"positive control failed as expected: {r.detail}",
            )
        return r
    if weak_why and r.result in (Result.passed, Result.fail):
        return replace(
            r,
            result=Result.inconclusive,
            reason=PROBE_WEAK,
            detail=f"probe weak this round ({weak_why}); was {r.result.value}: {r.detail}",
        )
    return r


def apply_model_wide(
    model: str,
    results: Results,
    controls: frozenset[str],
    rules: PolicyRules,
    usable: frozenset[str],
    *,
    evidence: tuple[Look, ...] = (),
) -> tuple[Results, list[Event]]:
    """A contract failing on most usable endpoints says something about the model or the probe.

    For each contract, the endpoints counted are the usable ones (named by no published entry)
    with a conclusive result (pass or fail) for it; the positive controls are never counted
    (they are no capacity, and their refusal failures are expected). When at least ``MODEL_WIDE_MIN_JUDGED`` are counted, at least 2 of them fail and
    failing / counted > ``rules.model_wide_share``, each of those failures becomes
    ``inconclusive`` (reason ``model_wide``) and one ``model_wide`` event is emitted. Failures of
    excluded endpoints are neither counted nor excused.
    """
    out: Results = {tag: list(rs) for tag, rs in results.items()}
    events: list[Event] = []
    for contract in Contract:
        counted: list[str] = []
        failing: list[str] = []
        for tag, rs in sorted(out.items()):
            if tag not in usable or tag in controls:
                continue
            outcomes = {r.result for r in rs if r.contract is contract}
            if Result.fail in outcomes:
                failing.append(tag)
                counted.append(tag)
            elif Result.passed in outcomes:
                counted.append(tag)
        if not _is_model_wide(len(failing), len(counted), rules.model_wide_share):
            continue
        summary = f"{contract.value} failed on {len(failing)}/{len(counted)} endpoints"
        for tag in failing:
            out[tag] = [
                replace(
                    r,
                    result=Result.inconclusive,
                    reason=MODEL_WIDE,
                    detail=f"model-wide: {summary}; {r.detail}",
                )
                if r.contract is contract and r.result is Result.fail
                else r
                for r in out[tag]
            ]
        events.append(
            ModelWide(
                model=model,
                contract=contract,
                failing=len(failing),
                total=len(counted),
                tags=tuple(failing),
                why=summary,
                evidence=evidence,
            )
        )
    return out, events


def _is_model_wide(failing: int, counted: int, share: float) -> bool:
    return failing >= 2 and counted >= MODEL_WIDE_MIN_JUDGED and failing / counted > share


def aggregate(model: str, tag: str, results: Sequence[ContractResult]) -> RoundVerdict:
    """One endpoint's verdict from its (already adjusted) contract results.

    ``fail`` when any contract failed; ``pass`` when every applicable contract passed (at least
    one); ``transport_error`` when the only non-passing applicable results are transport errors;
    otherwise ``inconclusive`` (also when nothing applicable was measured). A positive control's
    expected refusal failure (reason ``positive_control``) counts as not applicable, so it never
    counts against the control: its other contracts decide.
    """
    applicable = [
        r for r in results if r.result is not Result.not_applicable and r.reason != POSITIVE_CONTROL
    ]
    outcomes = {r.result for r in applicable}
    if Result.fail in outcomes:
        verdict = Verdict.fail
    elif outcomes == {Result.passed}:
        verdict = Verdict.passed
    elif outcomes and outcomes <= {Result.passed, Result.transport_error}:
        verdict = Verdict.transport_error
    else:
        verdict = Verdict.inconclusive
    return RoundVerdict(
        model=model,
        tag=tag,
        verdict=verdict,
        results=tuple(results),
        language_anomaly_in=language_anomaly(results),
    )


def language_anomaly(results: Sequence[ContractResult]) -> str | None:
    """The language whose anomaly must be repeated next round, if any result flagged one."""
    for r in results:
        if r.contract is Contract.language and r.language_anomaly and r.language:
            return r.language
    return None


def verdict_event(verdict: RoundVerdict, *, look: Look | None = None) -> VerdictEvent:
    """The audit/drill ``verdict`` event of one endpoint's round verdict."""
    return VerdictEvent(
        model=verdict.model,
        tag=verdict.tag,
        verdict=verdict.verdict,
        results=tuple(
            ResultLine(r.contract, r.result, r.detail, r.reason, r.figure, r.language)
            for r in verdict.results
        ),
        language_anomaly_in=verdict.language_anomaly_in,
        evidence=() if look is None else (look,),
    )
