"""Builders of the core's records for tests: observations, contract results, round verdicts and
endpoints. Each takes what a test is about and fills the rest with plain defaults, so a test names
only the fields it checks. (Fleets, stores and simulators have their own kits beside their tests:
tests/core/core_builders.py, tests/cli/cli_fleet.py, tests/api/ops_seed.py, tests/drills.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Transport,
    Verdict,
)
from canary.store.repository import Store
from canary.store.rows import RoundRow

MODEL = "acme/roleplay-1"


def observation(
    contract: Contract = Contract.ttft,
    tag: str = "alpha",
    transport: Transport = Transport.ok,
    **fields: Any,
) -> Observation:
    """One probe's answer (``fields``: any other field of :class:`Observation`)."""
    return Observation(contract, tag, transport, **fields)


def result(
    contract: Contract, outcome: Result = Result.passed, detail: str = "", **fields: Any
) -> ContractResult:
    """One contract's result; the detail says which, unless given."""
    return ContractResult(
        contract, outcome, detail or f"{contract.value} {outcome.value}", **fields
    )


def ttft(seconds: float, outcome: Result = Result.passed) -> ContractResult:
    """A first-token time and its result, as the ttft contract words it."""
    return result(Contract.ttft, outcome, f"ttft {seconds} s <= 10 s", figure=seconds)


def verdict(
    model: str,
    tag: str,
    outcome: Verdict = Verdict.passed,
    *results: ContractResult,
    **fields: Any,
) -> RoundVerdict:
    """An endpoint's verdict of a round; by default one passed ttft result (1.2 s)."""
    return RoundVerdict(model, tag, outcome, results or (ttft(1.2),), **fields)


def passed(model: str, tags: Iterable[str], *results: ContractResult) -> dict[str, RoundVerdict]:
    """A round every one of ``tags`` passed: the verdicts by tag."""
    return {tag: verdict(model, tag, Verdict.passed, *results) for tag in tags}


def endpoint(
    tag: str = "alpha",
    *parameters: str,
    model: str = MODEL,
    price: float = 1e-7,
    **fields: Any,
) -> Endpoint:
    """A listed endpoint: its display name from the tag (``deepinfra/fp8`` -> ``Deepinfra``), a
    completion price twice the prompt's (unless ``pricing`` is given), the ``parameters`` it
    supports."""
    fields.setdefault("provider_name", tag.split("/")[0].title())
    fields.setdefault("pricing", Pricing(price, 2 * price))
    return Endpoint(model=model, tag=tag, supported_parameters=tuple(parameters), **fields)


def endpoints(model: str, *tags: str, **fields: Any) -> list[Endpoint]:
    """A listing of ``tags`` (``fields`` for every one of them)."""
    return [endpoint(tag, model=model, **fields) for tag in tags]


def round_of(store: Store, round_id: int) -> RoundRow:
    """One round read through the store's public reads (its newest rounds)."""
    return next(r for r in store.recent_rounds(limit=1000) if r.id == round_id)
