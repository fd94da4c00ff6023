"""Confirm every failure before it counts. Pure.

A contract that fails on its first look (its usual judgement over the round's answers) is
re-checked at once: two more answers to the same probe, sent together, each judged alone as a
:class:`Recheck`. The contract fails the round only when 2 of the 3 looks fail. So the cost is paid
only on failures; one sporadic bad answer (a broken JSON object 1 % of the time, a queue burst)
fails a round only when a re-check reproduces it, while a host that fails every time fails as
before.

The outcome of a first-look failure:

- at least 2 of the 3 looks fail: ``fail``, with the re-checks named in the detail;
- both re-checks pass: ``pass`` (reason ``not_confirmed``): one answer out of three proves nothing;
- otherwise (a re-check lost to transport, or unsure): ``inconclusive``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from canary.core.model import Contract, ContractResult, Result

RECHECKS = 2  # answers sent together after a first-look failure
FAIL_AT = 2  # failing looks, of the 3, that fail the contract
LOOKS = 1 + RECHECKS
NOT_CONFIRMED = "not_confirmed"

# The probe whose answers re-check each contract. Hygiene has no probe of its own: the language
# probe's prose answers re-check it (and serve the language contract too when both need them).
RECHECK_PROBE: Mapping[Contract, Contract] = {
    Contract.ttft: Contract.ttft,
    Contract.refusal: Contract.refusal,
    Contract.schema: Contract.schema,
    Contract.tools: Contract.tools,
    Contract.language: Contract.language,
    Contract.hygiene: Contract.language,
}


@dataclass(frozen=True)
class Recheck:
    """One re-check answer judged alone (one of the 3 looks of a confirmation): ``pass``,
    ``fail`` or ``inconclusive``, and why."""

    result: Result
    why: str


def recheck_probes(first: Iterable[ContractResult]) -> tuple[Contract, ...]:
    """The probes to send twice more: those re-checking a contract that failed its first look."""
    return tuple(
        sorted(
            {RECHECK_PROBE[r.contract] for r in first if r.result is Result.fail},
            key=list(Contract).index,
        )
    )


def confirm(first: ContractResult, looks: Sequence[Recheck]) -> ContractResult:
    """The contract's result for the round from its first look and the re-checks' looks."""
    if first.result is not Result.fail:
        return first
    failing = 1 + sum(look.result is Result.fail for look in looks)
    passing = sum(look.result is Result.passed for look in looks)
    shown = "; ".join(f"{look.result.value}: {look.why}" for look in looks) or "none sent"
    counts = f"{failing}/{LOOKS} looks fail (re-checks: {shown})"
    if failing >= FAIL_AT:
        return replace(first, detail=f"{first.detail}; confirmed, {counts}")
    if passing >= RECHECKS:
        return replace(
            first,
            result=Result.passed,
            reason=NOT_CONFIRMED,
            detail=f"not confirmed by the re-checks, {counts}; first look: {first.detail}",
        )
    return replace(
        first,
        result=Result.inconclusive,
        detail=f"re-checks inconclusive, {counts}; first look: {first.detail}",
    )
