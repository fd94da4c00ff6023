"""Positive controls are never capacity and are published in a layer of their own (issue 30,
defect 5); a needs list counts only the endpoints that can serve its needs (defect 11)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_builders import ENFORCE, MODEL, OBSERVE, T0, Fleet, cr, kinds, listing, rv
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.core.controls import CONTROL_REASON, NO_CONTROLS, Controls
from canary.core.document import ignore_document
from canary.core.floor import check_exclusion, publish
from canary.core.identity import Listed
from canary.core.model import (
    Contract,
    ContractResult,
    EventKind,
    Exclusion,
    Layer,
    Look,
    Result,
    Verdict,
)
from canary.core.needs import publish_for_needs
from canary.core.quarantine import decide_model
from canary.core.verdict import judge_round

DAY = timedelta(days=1)
CTL = Controls.of(["ctl"])
HIDDEN = Controls.of(["ctl"], published=False)


def q(tag: str, *causes: str, hours: int = 1) -> Exclusion:
    since = T0 - timedelta(hours=hours)
    return Exclusion(MODEL, tag, Layer.quarantine, "q", since=since, until=since + DAY,
                     causes=causes, id=100 - hours)  # fmt: skip


def test_a_control_is_published_by_its_exact_tag_in_the_control_layer() -> None:
    published = publish(MODEL, listing("a", "b", "ctl"), [], [], [], floor=2, now=T0, controls=CTL)
    [entry] = published.entries
    assert (entry.tag, entry.layer, entry.reason) == ("ctl", Layer.control, CONTROL_REASON)
    assert published.ignore == ["ctl"] and published.usable == ("a", "b")
    document = ignore_document(published, generated_at=T0, stale=False, policy_version="p-1")
    assert document["entries"] == [
        {"provider": "ctl", "name": None, "layer": "control", "reason": CONTROL_REASON,
         "since": None, "until": None}
    ]  # fmt: skip
    assert document["usable_endpoints"] == 2 and not document["floor_breached"]


def test_a_control_entry_is_never_widened_to_its_base_slug() -> None:
    """``ctl`` names the endpoint ``ctl``, not ``ctl/fast`` (which stays capacity)."""
    published = publish(
        MODEL, listing("a", "ctl", "ctl/fast"), [], [], [], floor=2, now=T0, controls=CTL
    )
    assert published.ignore == ["ctl"] and published.usable == ("a", "ctl/fast")


def test_a_control_never_counts_as_capacity_even_when_not_published() -> None:
    """Before, the floor counted the control usable: 3 of 3, no breach, and it withheld the
    control's own quarantine to keep the floor."""
    hidden = publish(MODEL, listing("a", "ctl"), [], [], [], floor=2, now=T0, controls=HIDDEN)
    assert hidden.ignore == [] and hidden.usable == ("a",) and hidden.breached
    ctl_quarantine = q("ctl", "schema")
    held = publish(
        MODEL, listing("a", "b", "ctl"), [], [], [ctl_quarantine], floor=3, now=T0, controls=HIDDEN
    )
    assert held.withheld == () and held.ignore == ["ctl"]  # withholding it gives nothing back
    assert held.usable == ("a", "b") and held.breached


def test_the_floor_never_withholds_a_control_and_says_it_is_breached() -> None:
    published = publish(
        MODEL, listing("a", "b", "ctl"), [], [], [q("a", "schema")], floor=2, now=T0, controls=CTL
    )
    assert [e.tag for e in published.withheld] == ["a"] and published.ignore == ["ctl"]
    assert published.usable == ("a", "b") and not published.breached
    tighter = publish(MODEL, listing("a", "ctl"), [], [], [], floor=2, now=T0, controls=CTL)
    assert tighter.ignore == ["ctl"] and tighter.breached  # never withheld to keep the floor


def test_without_controls_nothing_changes() -> None:
    published = publish(MODEL, listing("a", "ctl"), [], [], [], floor=2, now=T0)
    assert published.controls == NO_CONTROLS and published.usable == ("a", "ctl")


def test_an_operator_exclusion_of_the_control_takes_no_capacity() -> None:
    before = publish(MODEL, listing("a", "b", "ctl"), [], [], [], floor=2, now=T0, controls=CTL)
    entry = Exclusion(MODEL, "ctl", Layer.runtime, "ops", since=T0)
    check = check_exclusion(before, entry, force=False, now=T0)
    assert check.allowed and (check.usable_before, check.usable_after) == (2, 2)
    other = check_exclusion(before, Exclusion(MODEL, "a", Layer.runtime, "ops", since=T0),
                            force=False, now=T0)  # fmt: skip
    assert not other.allowed and other.usable_after == 1  # the control does not make up for it


def test_would_quarantine_never_counts_the_control_usable() -> None:
    """The observe drill of the issue listed ``usable: [a, b, c, ctl, g]``."""
    fleet = Fleet(("a", "b", "ctl", "g"), rules=OBSERVE, floor=2)
    fleet.round({"g": Verdict.fail})
    later = T0 + timedelta(minutes=30)
    decision = decide_model(
        MODEL, fleet.states, {t: rv(t, Verdict.fail if t == "g" else Verdict.passed)
                              for t in ("a", "b", "ctl", "g")},
        look=Look.round(2, later), now=later, rules=OBSERVE, capacity_floor=2,
        listing=listing("a", "b", "ctl", "g"), controls=CTL,
    )  # fmt: skip
    [would] = kinds(decision, EventKind.would_quarantine)
    assert would.tag == "g" and would.detail["usable"] == ["a", "b", "g"]
    assert would.detail["floor_would_hold"] is False


def test_the_floor_holds_a_quarantine_the_control_would_have_made_room_for() -> None:
    fleet = Fleet(("a", "g", "ctl"), rules=ENFORCE, floor=2)
    fleet.round({"g": Verdict.fail})
    later = T0 + timedelta(minutes=30)
    decision = decide_model(
        MODEL, fleet.states, {t: rv(t, Verdict.fail if t == "g" else Verdict.passed)
                              for t in ("a", "g", "ctl")},
        look=Look.round(2, later), now=later, rules=ENFORCE, capacity_floor=2,
        listing=listing("a", "g", "ctl"), controls=CTL,
    )  # fmt: skip
    assert decision.quarantines == ()
    [held] = kinds(decision, EventKind.floor_held)
    assert held.detail["usable"] == ["a", "g"]


def test_the_model_wide_rule_never_counts_a_control() -> None:
    """Schema fails on the control and on b, a passes: counting the control made it 2 failing of
    3 judged, and excused b's failure as model-wide."""

    def with_schema(result: Result) -> list[ContractResult]:
        return [cr(Contract.schema, result)]

    results = {"a": with_schema(Result.passed), "b": with_schema(Result.fail),
               "ctl": with_schema(Result.fail)}  # fmt: skip
    out = judge_round(MODEL, results, positive_controls=["ctl"], rules=OBSERVE, usable=None)
    assert out.verdicts["b"].verdict is Verdict.fail
    assert not [e for e in out.events if e.kind is EventKind.model_wide]
    four = {"b": with_schema(Result.fail), "c": with_schema(Result.passed),
            "ctl": with_schema(Result.fail), "d": with_schema(Result.fail)}  # fmt: skip
    wide = judge_round(MODEL, four, positive_controls=["ctl"], rules=OBSERVE, usable=None)
    [event] = [e for e in wide.events if e.kind is EventKind.model_wide]
    assert event.detail["total"] == 3 and event.detail["tags"] == ["b", "d"]  # ctl not counted


# --- needs --------------------------------------------------------------------------------


def endpoint(tag: str, *capabilities: str) -> Listed:
    return Listed(tag, capabilities=frozenset(capabilities))


FLEET = (
    endpoint("a", "tools", "structured_outputs"),
    endpoint("b", "tools"),
    endpoint("c"),
    endpoint("d", "structured_outputs"),
    endpoint("e"),
)


def test_a_needs_list_counts_only_the_endpoints_that_advertise_its_needs() -> None:
    """Five endpoints, two advertise tools: the tools list has 2 usable, not 5."""
    full = publish(MODEL, FLEET, [], [], [], floor=2, now=T0)
    tools = publish_for_needs(MODEL, FLEET, [], [], [], needs={"tools"}, floor=2, now=T0,
                              controls=NO_CONTROLS)  # fmt: skip
    both = publish_for_needs(MODEL, FLEET, [], [], [], needs={"tools", "structured_outputs"},
                             floor=2, now=T0, controls=NO_CONTROLS)  # fmt: skip
    assert full.usable == ("a", "b", "c", "d", "e")
    assert tools.usable == ("a", "b") and not tools.breached
    assert both.usable == ("a",) and both.breached


def test_excluding_the_capable_endpoints_breaches_the_needs_list() -> None:
    """The issue's case: the operator forced out the two tool endpoints; the tools list said
    ``floor_breached: false`` with two "usable" endpoints that cannot call tools."""
    runtime = [Exclusion(MODEL, t, Layer.runtime, "ops", since=T0) for t in ("a", "b")]
    tools = publish_for_needs(MODEL, FLEET, [], runtime, [], needs={"tools"}, floor=2, now=T0,
                              controls=NO_CONTROLS)  # fmt: skip
    assert tools.usable == () and tools.breached
    document = ignore_document(tools, generated_at=T0, stale=False, policy_version="p-1",
                               needs={"tools"})  # fmt: skip
    assert document["usable_endpoints"] == 0 and document["floor_breached"] is True


def test_a_needs_list_withholds_only_what_serves_its_needs() -> None:
    """c (no tools) is quarantined for ttft: withholding it gives a tools app nothing back."""
    layers = [q("c", "ttft", hours=1), q("b", "ttft", hours=2)]
    tools = publish_for_needs(MODEL, FLEET, [], [], layers, needs={"tools"}, floor=2, now=T0,
                              controls=NO_CONTROLS)  # fmt: skip
    assert [e.tag for e in tools.withheld] == ["b"] and tools.ignore == ["c"]
    assert tools.usable == ("a", "b") and not tools.breached


@pytest.mark.parametrize(
    "needs", [set(), {"tools"}, {"structured_outputs"}, {"tools", "structured_outputs"}]
)
def test_the_control_entry_is_on_every_variant(needs: set[str]) -> None:
    """Quarantined for schema only, the control came back on a tools list; its control entry
    applies to every list."""
    capable = [endpoint(t, "tools", "structured_outputs") for t in ("a", "b", "ctl")]
    layers = [q("ctl", "schema")]
    variant = publish_for_needs(MODEL, capable, [], [], layers, needs=needs, floor=2, now=T0,
                                controls=CTL)  # fmt: skip
    assert "ctl" in variant.ignore and variant.usable == ("a", "b")
    assert any(e.layer is Layer.control and e.tag == "ctl" for e in variant.entries)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d", "ctl", "e/x"]),
            st.sets(st.sampled_from(["tools", "structured_outputs"])),
        ),
        unique_by=lambda t: t[0],
        max_size=6,
    ),
    st.sets(st.sampled_from(["tools", "structured_outputs"])),
    st.lists(st.sampled_from(["a", "b", "c", "d", "ctl", "e"]), max_size=3),
    st.booleans(),
    st.integers(0, 4),
)
def test_usable_capacity_is_never_a_control_nor_an_endpoint_that_cannot_serve_the_needs(
    endpoints: list[tuple[str, set[str]]],
    needs: set[str],
    excluded: list[str],
    shown: bool,
    floor: int,
) -> None:
    fleet = [endpoint(t, *caps) for t, caps in endpoints]
    runtime = [Exclusion(MODEL, t, Layer.runtime, "ops", since=T0) for t in excluded]
    published = publish_for_needs(MODEL, fleet, [], runtime, [], needs=needs, floor=floor,
                                  now=T0, controls=Controls.of(["ctl"], shown))  # fmt: skip
    capable = {e.tag for e in fleet if needs <= e.capabilities}
    assert published.usable is not None
    assert "ctl" not in published.usable and set(published.usable) <= capable
    assert published.breached is (len(published.usable) < floor)
    assert ("ctl" in published.ignore) is (shown or "ctl" in excluded)
