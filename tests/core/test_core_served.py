"""Model identity drift: the served model per endpoint and its changes (tables)."""

from __future__ import annotations

import pytest
from builders import observation

from canary.core.model import Contract, Observation, Transport
from canary.core.served import is_expected, served_model, served_model_changes

M = "acme/chat-1"


def obs(served: str | None, transport: Transport = Transport.ok) -> Observation:
    return observation(Contract.ttft, "a", transport, served_model=served)


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        ([], None),
        ([obs(None)], None),
        ([obs("acme/chat-1"), obs("acme/chat-1"), obs("other/x")], "acme/chat-1"),
        ([obs("b/x"), obs("a/x")], "a/x"),  # a tie, and nothing before: the first alphabetically
        ([obs("other/x", Transport.timeout), obs("acme/chat-1")], "acme/chat-1"),
    ],
)
def test_the_served_model_is_what_most_completed_answers_report(
    observations: list[Observation], expected: str | None
) -> None:
    assert served_model(observations) == expected


A, B, C = "acme/chat-1", "acme/chat-2", "acme/chat-3"


@pytest.mark.parametrize(
    ("answers", "previous", "expected"),
    [
        ((B, B, B, A), A, B),  # 3 of 4: a clear majority moves it
        ((B,), A, B),
        ((B, B, A), A, A),  # 2 of 3 is not more than two thirds: the previous value stands
        ((A, B), A, A),  # an even split
        ((B, B, B, B, A, A, A), A, A),  # 4 to 3
        ((A, A, A, A, B, B, B), B, B),
        ((A, A, A, B), B, A),
        ((A, B, C), C, C),  # no majority, and the previous one still answers
        ((A, A, B, B), C, None),  # no majority, and the previous one gone: nothing clear
        ((A, B), None, A),  # a first sighting: the most reported, ties alphabetically
        ((A, B, B), None, B),
    ],
)
def test_a_new_served_model_needs_a_clear_majority(
    answers: tuple[str, ...], previous: str | None, expected: str | None
) -> None:
    assert served_model([obs(a) for a in answers], previous) == expected


def test_an_endpoint_split_about_evenly_does_not_alert_round_after_round() -> None:
    """Two ids, 4 to 3 one way, then the other, round after round: recorded once, never changed,
    so no alert (the plain majority would flip it, and alert, every round)."""
    recorded: dict[str, str] = {}
    alerts = 0
    for answers in [(A,) * 4 + (B,) * 3, (B,) * 4 + (A,) * 3] * 3:
        now = served_model([obs(a) for a in answers], recorded.get("a"))
        assert now is not None
        alerts += len(served_model_changes(M, recorded, {"a": now}))
        recorded["a"] = now
    assert alerts == 0 and recorded == {"a": A}


@pytest.mark.parametrize(
    ("served", "permaslug", "expected"),
    [
        ("acme/chat-1", None, True),
        ("acme/chat-1-2025-06-01", None, True),
        ("acme/chat-1-20250601", None, True),
        ("acme/chat-1-0601", None, False),
        ("acme/chat-2", None, False),
        ("acme/chat-1-preview", "acme/chat-1-preview", True),  # the listing's model_id
        ("acme/chat-1x", None, False),
    ],
)
def test_expected_ids(served: str, permaslug: str | None, expected: bool) -> None:
    assert is_expected(served, M, permaslug) is expected


def test_a_change_from_the_previous_round_is_an_alert_and_a_first_sighting_is_not() -> None:
    [change] = served_model_changes(
        M, {"a": "acme/chat-1", "b": "acme/chat-1"}, {"a": "acme/chat-1", "b": "x/y", "c": "z/z"}
    )
    assert (change.tag, change.field, change.old, change.new, change.alert) == (
        "b", "served_model", "acme/chat-1", "x/y", True)  # fmt: skip
    assert served_model_changes(M, {}, {"a": "x/y"}) == ()


def test_a_change_on_every_endpoint_at_once_is_one_model_level_change() -> None:
    before = {"a": "acme/chat-1", "b": "acme/chat-1"}
    [change] = served_model_changes(M, before, {"a": "acme/chat-2", "b": "acme/chat-2"})
    assert (change.tag, change.old, change.new) == (None, ["acme/chat-1"], "acme/chat-2")
    assert (
        change.alert
        and change.reason == "every endpoint now serves acme/chat-2 instead of acme/chat-1"
    )
    split = served_model_changes(M, before, {"a": "acme/chat-2", "b": "acme/chat-3"})
    assert [c.tag for c in split] == ["a", "b"]


def test_every_endpoint_moving_to_one_id_from_different_ones_is_one_change_listing_them() -> None:
    before = {"a": "acme/chat-1", "b": "acme/chat-1-2025-06-01", "c": "other/x"}
    after = dict.fromkeys(before, "acme/chat-2")
    [change] = served_model_changes(M, before, after)
    assert change.tag is None and change.new == "acme/chat-2"
    assert change.old == ["acme/chat-1", "acme/chat-1-2025-06-01", "other/x"]
    assert change.reason == (
        "every endpoint now serves acme/chat-2 instead of acme/chat-1, acme/chat-1-2025-06-01, "
        "other/x"
    )


@pytest.mark.parametrize(
    ("before", "after", "tags"),
    [
        # one endpoint kept its id: not every endpoint moved
        ({"a": A, "b": B, "c": C}, {"a": C, "b": C, "c": C}, ["a", "b"]),
        # one endpoint is seen for the first time: it did not move
        ({"a": A, "b": B}, {"a": C, "b": C, "c": C}, ["a", "b"]),
        # a model of one endpoint: its own change, not the model's
        ({"a": A}, {"a": B}, ["a"]),
    ],
)
def test_a_change_not_seen_on_every_endpoint_stays_per_endpoint(
    before: dict[str, str], after: dict[str, str], tags: list[str]
) -> None:
    assert [c.tag for c in served_model_changes(M, before, after)] == tags
