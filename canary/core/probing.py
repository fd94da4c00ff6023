"""Whether a model's round got past OpenRouter itself. Pure.

A round whose every probe stopped at OpenRouter saw nothing of the providers: OpenRouter refused
each request as configured (``auth_config``: a key missing, rejected or out of credits, a model
the key may not use, a wrong base URL), or no connection to it could be opened
(``unreachable``). Such a round decides nothing about a provider (its verdicts are transport
errors, which freeze every count) and is not a successful round: the success timestamp does not
move, ``canary round`` exits 1, ``/readyz`` names the problem. A provider's own errors (a 5xx
relayed by OpenRouter, a timeout, a rate limit, an unroutable pin) got past OpenRouter: they
never make a round unsuccessful, even when the model's only provider is down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from canary.core.model import Observation, Transport


class Probing(StrEnum):
    """Why a round's probes never got past OpenRouter (``detail.probing`` of its row)."""

    auth_config = "auth_config"  # OpenRouter refused them as configured
    unreachable = "unreachable"  # no connection to OpenRouter could be opened


# The order a mixed round names its problem in: a refusal is what an operator can fix.
_FIRST = (Probing.auth_config, Probing.unreachable)


@dataclass(frozen=True)
class Stopped:
    """A round that never got past OpenRouter: why, and one request's error to show."""

    problem: Probing
    error: str | None

    def describe(self) -> str:
        what = {
            Probing.auth_config: "OpenRouter refused every probe",
            Probing.unreachable: "no probe could reach OpenRouter",
        }[self.problem]
        return f"{what} ({self.problem}{': ' + self.error if self.error else ''})"


def stopped_at_openrouter(observation: Observation) -> Probing | None:
    """Why this request stopped at OpenRouter itself, or None when it got past it."""
    if observation.transport is Transport.auth_config:
        return Probing.auth_config
    if not observation.connected:
        return Probing.unreachable
    return None


def round_stopped(observations: Sequence[Observation]) -> Stopped | None:
    """The round's problem when every one of its probes stopped at OpenRouter; None when one got
    past it, or when it sent none (every endpoint skipped, none listed: nothing was refused)."""
    stops = [(stopped_at_openrouter(o), o) for o in observations]
    if not stops or any(problem is None for problem, _ in stops):
        return None
    for problem in _FIRST:
        for seen, observation in stops:
            if seen is problem:
                return Stopped(problem, observation.error)
    return None  # unreachable: every stop is one of _FIRST


def listing_stopped(transport: Transport, *, connected: bool, error: str) -> Stopped | None:
    """The problem of a round whose endpoints listing failed for good, when it stopped at
    OpenRouter itself (refused as configured, or never connected); None for the provider-side
    failures (an outage, a timeout) that abandon a round without naming a configuration."""
    if transport is Transport.auth_config:
        return Stopped(Probing.auth_config, error)
    if not connected:
        return Stopped(Probing.unreachable, error)
    return None


def fleet_probing(problems: Sequence[Probing | None]) -> Probing | None:
    """The problem ``/readyz`` names for the models' latest rounds: the first of
    :data:`_FIRST` any of them has, else None."""
    for problem in _FIRST:
        if problem in problems:
            return problem
    return None
