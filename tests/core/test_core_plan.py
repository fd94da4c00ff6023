"""The planner: which language a round asks each endpoint in (tables)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_builders import ENFORCE, INTERVAL, MODEL, T0

from canary.core.model import Contract, Endpoint, EndpointState, Pricing
from canary.core.plan import pick_language, plan_endpoint, repeat_language

LANGUAGES = ("en", "es", "pt", "de")
MAX_AGE = ENFORCE.streak_max_age
ENDPOINT = Endpoint(MODEL, "alpha", "Alpha", Pricing(0.0, 0.0))


def pending(since_ago: timedelta | None, language: str = "pt") -> EndpointState:
    since = None if since_ago is None else T0 - since_ago
    return EndpointState(MODEL, "alpha", next_language=language, next_language_since=since)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (None, None),
        (EndpointState(MODEL, "alpha"), None),
        (pending(INTERVAL), "pt"),
        (pending(MAX_AGE), "pt"),  # exactly the max age: still repeated
        (pending(MAX_AGE + timedelta(seconds=1)), None),  # after an outage: the rotation resumes
        (pending(timedelta(days=3)), None),
        (pending(None), None),  # pending since an unknown time: as good as stale
    ],
)
def test_a_pending_language_is_repeated_for_at_most_the_max_age(
    state: EndpointState | None, expected: str | None
) -> None:
    assert repeat_language(state, T0, MAX_AGE) == expected


def test_the_round_after_a_long_outage_asks_in_the_rotation_not_the_stale_language() -> None:
    def language(state: EndpointState) -> str:
        probes = plan_endpoint(
            ENDPOINT, state, index=7, languages=LANGUAGES, ttft_samples=1,
            applicable=lambda c, e: c is not Contract.tools, now=T0, max_age=MAX_AGE,
        )  # fmt: skip
        assert len({p.language for p in probes}) == 1
        return probes[0].language

    rotation = pick_language("alpha", 7, LANGUAGES, None)
    stale = next(x for x in LANGUAGES if x != rotation)
    assert language(pending(INTERVAL, stale)) == stale
    assert language(pending(MAX_AGE + INTERVAL, stale)) == rotation
