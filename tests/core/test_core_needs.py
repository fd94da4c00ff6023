"""Lists per set of needs (tables)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_builders import MODEL, T0

from canary.core.floor import publish
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer
from canary.core.needs import UnknownNeed, applies, for_needs, parse_needs

DAY = timedelta(days=1)


def q(tag: str, *causes: str) -> Exclusion:
    return Exclusion(MODEL, tag, Layer.quarantine, "q", since=T0, until=T0 + DAY, causes=causes)


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        (None, frozenset()),
        ("", frozenset()),
        ("tools", frozenset({"tools"})),
        (" structured_outputs , tools,", frozenset({"structured_outputs", "tools"})),
    ],
)
def test_needs_are_parsed_from_a_comma_separated_list(
    text: str | None, needs: frozenset[str]
) -> None:
    assert parse_needs(text) == needs


def test_an_unknown_need_names_the_known_ones() -> None:
    with pytest.raises(UnknownNeed, match=r"unknown need\(s\) vision .*structured_outputs, tools"):
        parse_needs("tools,vision")


@pytest.mark.parametrize(
    ("entry", "needs", "expected"),
    [
        (q("a", "schema"), {"tools"}, False),  # the app never asks for structured output
        (q("a", "schema"), {"structured_outputs"}, True),
        (q("a", "schema", "tools"), {"tools"}, True),
        (q("a", "tools"), set(), False),
        (q("a", "schema", "ttft"), {"tools"}, True),  # latency concerns every request
        (q("a", "hygiene"), set(), True),
        (q("a", "all"), set(), True),  # causes unknown: the safe side
        (q("a"), set(), True),
        (Exclusion(MODEL, "a", Layer.runtime, "ops"), set(), True),  # humans always apply
        (q("a", "schema"), None, True),  # no needs stated: the full list
    ],
)
def test_a_quarantine_applies_unless_every_cause_is_a_capability_not_needed(
    entry: Exclusion, needs: set[str] | None, expected: bool
) -> None:
    assert applies(entry, needs) is expected


def test_the_cut_list_counts_usable_again() -> None:
    listing = [Listed(t) for t in ("a", "b", "c")]
    full = publish(MODEL, listing, [], [], [q("a", "schema"), q("b", "ttft")], floor=1, now=T0)
    assert full.ignore == ["a", "b"] and full.usable == ("c",)
    cut = for_needs(full, {"tools"})
    assert cut.ignore == ["b"] and cut.usable == ("a", "c")
