"""Model identity drift: the served model per endpoint and its changes (tables)."""

from __future__ import annotations

import pytest

from canary.core.model import Contract, Observation, Transport
from canary.core.served import is_expected, served_model, served_model_changes, unexpected

M = "acme/chat-1"


def obs(served: str | None, transport: Transport = Transport.ok) -> Observation:
    return Observation(Contract.ttft, "a", transport, served_model=served)


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        ([], None),
        ([obs(None)], None),
        ([obs("acme/chat-1"), obs("acme/chat-1"), obs("other/x")], "acme/chat-1"),
        ([obs("b/x"), obs("a/x")], "a/x"),  # a tie: the first alphabetically
        ([obs("other/x", Transport.timeout), obs("acme/chat-1")], "acme/chat-1"),
    ],
)
def test_the_served_model_is_what_most_completed_answers_report(
    observations: list[Observation], expected: str | None
) -> None:
    assert served_model(observations) == expected


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
    assert change.tag is None and change.new == "acme/chat-2"
    split = served_model_changes(M, before, {"a": "acme/chat-2", "b": "acme/chat-3"})
    assert [c.tag for c in split] == ["a", "b"]


def test_unexpected_ids_are_named() -> None:
    served = {"a": "acme/chat-1", "b": "other/model", "c": "acme/chat-1-2025-01-01"}
    assert unexpected(served, M, {}) == {"b": "other/model"}
