"""Whether a round got past OpenRouter itself (canary.core.probing): a table, and a property that
a provider's own errors never make a round unsuccessful."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from canary.core.model import Contract, Observation, Transport
from canary.core.probing import (
    Probing,
    Stopped,
    fleet_probing,
    listing_stopped,
    round_stopped,
    stopped_at_openrouter,
)

UNAUTHORISED = "HTTP 401: No auth credentials found"
REFUSED_CONNECTION = "connect_error: [Errno 111] Connection refused"


def seen(
    transport: Transport, *, connected: bool = True, error: str | None = None, tag: str = "a"
) -> Observation:
    return Observation(Contract.ttft, tag, transport, connected=connected, error=error)


def refused(tag: str = "a") -> Observation:
    return seen(Transport.auth_config, error=UNAUTHORISED, tag=tag)


def unreachable(tag: str = "a") -> Observation:
    return seen(Transport.provider_error, connected=False, error=REFUSED_CONNECTION, tag=tag)


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        ([], None),  # nothing sent (every endpoint skipped): nothing was refused
        ([refused("a"), refused("b")], Stopped(Probing.auth_config, UNAUTHORISED)),
        ([unreachable("a"), unreachable("b")], Stopped(Probing.unreachable, REFUSED_CONNECTION)),
        # a mixed round names the refusal: that is what an operator can fix
        ([unreachable("a"), refused("b")], Stopped(Probing.auth_config, UNAUTHORISED)),
        # one probe got past OpenRouter: the round saw a provider
        ([refused("a"), seen(Transport.ok, tag="b")], None),
        ([refused("a"), seen(Transport.provider_error, tag="b")], None),
        # the model's only provider is down, slow, saturated or gone: its problem, not ours
        ([seen(Transport.provider_error), seen(Transport.provider_error)], None),
        ([seen(Transport.timeout)], None),
        ([seen(Transport.rate_limited)], None),
        ([seen(Transport.unroutable)], None),
        ([seen(Transport.bad_request)], None),  # our bug, but OpenRouter took the request
    ],
)
def test_a_round_is_stopped_only_when_every_probe_stopped_at_openrouter(
    observations: list[Observation], expected: Stopped | None
) -> None:
    assert round_stopped(observations) == expected


def test_the_stop_says_what_and_why_in_one_line() -> None:
    assert Stopped(Probing.auth_config, UNAUTHORISED).describe() == (
        f"OpenRouter refused every probe (auth_config: {UNAUTHORISED})"
    )
    assert Stopped(Probing.unreachable, None).describe() == (
        "no probe could reach OpenRouter (unreachable)"
    )


@pytest.mark.parametrize(
    ("transport", "connected", "expected"),
    [
        (Transport.auth_config, True, Probing.auth_config),  # a wrong base URL, an unknown id
        (Transport.provider_error, False, Probing.unreachable),
        (Transport.timeout, False, Probing.unreachable),  # the connect timed out
        (Transport.provider_error, True, None),  # OpenRouter answered 5xx: provider side
        (Transport.timeout, True, None),
    ],
)
def test_a_failed_listing_names_a_stop_only_at_openrouter(
    transport: Transport, connected: bool, expected: Probing | None
) -> None:
    stop = listing_stopped(transport, connected=connected, error="listing failed")
    assert (stop.problem if stop else None) == expected


def test_readyz_names_the_refusal_first() -> None:
    assert fleet_probing([None, None]) is None
    assert fleet_probing([]) is None
    assert fleet_probing([None, Probing.unreachable]) is Probing.unreachable
    assert fleet_probing([Probing.unreachable, Probing.auth_config]) is Probing.auth_config


PROVIDER_SIDE = [t for t in Transport if t is not Transport.auth_config]
observations = st.lists(
    st.builds(
        seen,
        st.sampled_from(list(Transport)),
        connected=st.booleans(),
        tag=st.sampled_from(["a", "b/fp8", "c"]),
    ),
    max_size=12,
)


@given(observations, st.sampled_from(PROVIDER_SIDE), st.integers(min_value=0, max_value=12))
def test_a_probe_that_reached_a_provider_keeps_the_round_successful(
    others: list[Observation], transport: Transport, at: int
) -> None:
    """Whatever else the round saw, one request that OpenRouter took (connected, not refused
    as configured), however it then ended, makes the round a successful one."""
    mixed = [*others]
    mixed.insert(min(at, len(mixed)), seen(transport))
    assert round_stopped(mixed) is None


@given(observations)
def test_a_round_is_stopped_exactly_when_no_probe_got_past_openrouter(
    observed: list[Observation],
) -> None:
    stop = round_stopped(observed)
    stops = [stopped_at_openrouter(o) for o in observed]
    assert (stop is not None) == (bool(stops) and None not in stops)
    if stop is not None:
        assert stop.problem in stops
        assert (stop.problem is Probing.auth_config) == (Probing.auth_config in stops)
