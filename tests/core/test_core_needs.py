"""Lists per set of needs (tables)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_builders import MODEL, T0

from canary.core.controls import NO_CONTROLS
from canary.core.floor import publish
from canary.core.identity import CAPABILITIES, Listed
from canary.core.model import Exclusion, Layer
from canary.core.needs import UnknownNeed, causes_apply, parse_needs, publish_for_needs

DAY = timedelta(days=1)


def capable(*tags: str) -> list[Listed]:
    """Endpoints that advertise every capability a list can be cut for."""
    return [Listed(t, capabilities=frozenset(CAPABILITIES)) for t in tags]


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
    ("causes", "needs", "expected"),
    [
        (("schema",), {"tools"}, False),  # the app never asks for structured output
        (("schema",), {"structured_outputs"}, True),
        (("schema", "tools"), {"tools"}, True),
        (("tools",), set(), False),
        (("schema", "ttft"), {"tools"}, True),  # latency concerns every request
        (("hygiene",), set(), True),
        (("all",), set(), True),  # causes unknown: the safe side
        ((), set(), True),
    ],
)
def test_a_quarantine_applies_unless_every_cause_is_a_capability_not_needed(
    causes: tuple[str, ...], needs: set[str], expected: bool
) -> None:
    assert causes_apply(causes, needs) is expected


def test_the_cut_list_counts_usable_again() -> None:
    listing = capable("a", "b", "c")
    layers = [q("a", "schema"), q("b", "ttft")]
    full = publish(MODEL, listing, [], [], layers, floor=1, now=T0)
    assert full.ignore == ["a", "b"] and full.usable == ("c",)
    cut = publish_for_needs(MODEL, listing, [], [], layers, needs={"tools"}, floor=1, now=T0,
                            controls=NO_CONTROLS)  # fmt: skip
    assert cut.ignore == ["b"] and cut.usable == ("a", "c")


def q_at(tag: str, hours: int, *causes: str) -> Exclusion:
    since = T0 - timedelta(hours=hours)
    return Exclusion(MODEL, tag, Layer.quarantine, "q", since=since, until=since + DAY,
                     causes=causes, id=100 - hours)  # fmt: skip


def test_the_floor_is_held_on_each_variant_itself() -> None:
    """a (schema, older) is published and b (ttft, newer) withheld on the full list; an app
    that needs only tools can route to a anyway, so ignoring b still leaves it 2 usable."""
    listing = capable("a", "b", "c")
    layers = [q_at("a", 5, "schema"), q_at("b", 1, "ttft")]
    full = publish(MODEL, listing, [], [], layers, floor=2, now=T0)
    assert full.ignore == ["a"] and [e.tag for e in full.withheld] == ["b"]
    assert full.usable == ("b", "c") and not full.breached
    tools = publish_for_needs(MODEL, listing, [], [], layers, needs={"tools"}, floor=2, now=T0,
                              controls=NO_CONTROLS)  # fmt: skip
    assert tools.ignore == ["b"] and tools.withheld == ()
    assert tools.usable == ("a", "c") and not tools.breached
    both = publish_for_needs(
        MODEL,
        listing,
        [],
        [],
        layers,
        needs={"structured_outputs", "tools"},
        floor=2,
        now=T0,
        controls=NO_CONTROLS,
    )
    assert both.ignore == full.ignore and both.withheld == full.withheld  # the full list's needs


def test_a_variant_withholds_only_what_its_own_floor_needs() -> None:
    """c is excluded at runtime (humans always apply), a (schema, older) and b (ttft, newer) are
    quarantined, floor 2: the full list withholds both; a tools-only app can route to a anyway,
    so its list withholds b alone; the breach is the same on both (humans decide it)."""
    listing = capable("a", "b", "c")
    runtime = [Exclusion(MODEL, "c", Layer.runtime, "ops", since=T0 - DAY)]
    layers = [q_at("a", 5, "schema"), q_at("b", 1, "ttft")]
    full = publish(MODEL, listing, [], runtime, layers, floor=2, now=T0)
    assert [e.tag for e in full.withheld] == ["b", "a"] and full.usable == ("a", "b")
    tools = publish_for_needs(MODEL, listing, [], runtime, layers, needs={"tools"}, floor=2,
                              now=T0, controls=NO_CONTROLS)  # fmt: skip
    assert tools.ignore == ["c"] and [e.tag for e in tools.withheld] == ["b"]
    assert tools.usable == ("a", "b") and not tools.breached and not full.breached
    high = [publish_for_needs(MODEL, listing, [], runtime, layers, needs=n, floor=3, now=T0,
                              controls=NO_CONTROLS)
            for n in (set(), {"tools"}, {"structured_outputs"})]  # fmt: skip
    assert all(p.breached and p.usable == ("a", "b") for p in high)
