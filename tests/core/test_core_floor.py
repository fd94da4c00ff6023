"""The identity rule and the capacity floor held on the published list (tables)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from core_builders import MODEL, T0

from canary.core.floor import (
    FloorRecord,
    Publication,
    admit_exclusion,
    check_exclusion,
    exclusion_removed,
    publish,
    reconcile,
)
from canary.core.identity import InvalidTag, Listed, check_tag, matches, usable
from canary.core.model import EventKind, Exclusion, Layer

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def ex(tag: str, layer: Layer = Layer.runtime, **kw: Any) -> Exclusion:
    return Exclusion(model=MODEL, tag=tag, layer=layer, reason=f"{layer.value} {tag}", **kw)


def q(tag: str, started_hours_ago: float, ident: int) -> Exclusion:
    since = T0 - timedelta(hours=started_hours_ago)
    return ex(tag, Layer.quarantine, since=since, until=since + DAY, id=ident)


@pytest.mark.parametrize(
    ("entry", "tag", "tier", "expected"),
    [
        ("deepinfra", "deepinfra", None, True),
        ("deepinfra", "deepinfra/fp8", None, True),
        ("deepinfra", "deepinfra/fp8", "flex", False),  # a base slug skips service tiers
        ("deepinfra/fp8", "deepinfra/fp8", "flex", True),  # the full tag names it anyway
        ("deepinfra/fp8", "deepinfra/turbo", None, False),
        ("deep", "deepinfra/fp8", None, False),
        ("deepinfra/fp8", "deepinfra", None, False),
    ],
)
def test_an_entry_names_its_tag_or_every_endpoint_of_its_base_slug(
    entry: str, tag: str, tier: str | None, expected: bool
) -> None:
    assert matches(entry, Listed(tag, tier)) is expected


@pytest.mark.parametrize("tag", ["DeepInfra", "deepinfra/", "deep infra", "/fp8", "", "a/b/c"])
def test_tags_that_are_not_lowercase_slugs_are_refused(tag: str) -> None:
    with pytest.raises(InvalidTag, match="lowercase"):
        check_tag(tag)


def test_only_entries_active_now_take_capacity() -> None:
    listing = [Listed("a1"), Listed("b1"), Listed("c1")]
    ended = ex("c1", Layer.builtin, since=T0 - 90 * DAY, until=T0 - 30 * DAY)
    starts = ex("b1", Layer.builtin, since=T0 + DAY)
    assert usable(listing, [ended, starts], T0) == ("a1", "b1", "c1")


def test_a_base_slug_entry_takes_every_endpoint_of_the_provider_from_the_floor() -> None:
    listing = [Listed("deepinfra/fp8"), Listed("alpha"), Listed("beta")]
    p = publish(MODEL, listing, [ex("deepinfra", Layer.builtin)], [], [], floor=2, now=T0)
    assert p.usable == ("alpha", "beta") and not p.breached


def test_quarantines_are_withheld_most_recent_first_until_the_floor_is_met() -> None:
    listing = [Listed(t) for t in ("a", "b", "c", "d")]
    quarantines = [q("a", 3, 1), q("b", 2, 2), q("c", 1, 3)]
    p = publish(MODEL, listing, [], [], quarantines, floor=3, now=T0)
    assert [e.tag for e in p.withheld] == ["c", "b"]
    assert p.usable == ("b", "c", "d") and not p.breached
    assert p.ignore == ["a"]


def test_human_entries_are_never_withheld_and_the_breach_is_reported() -> None:
    listing = [Listed(t) for t in ("a", "b", "c")]
    p = publish(MODEL, listing, [ex("a", Layer.builtin)], [ex("b")], [q("c", 1, 1)], floor=2,
                now=T0)  # fmt: skip
    assert [e.tag for e in p.withheld] == ["c"]
    assert p.usable == ("c",) and p.breached and p.ignore == ["a", "b"]


def test_a_quarantine_that_gives_no_capacity_back_is_not_withheld() -> None:
    listing = [Listed("a"), Listed("b")]
    gone = q("z", 1, 1)  # its endpoint is no longer listed
    covered = q("a", 2, 2)  # a human entry names it too
    p = publish(MODEL, listing, [], [ex("a")], [gone, covered], floor=2, now=T0)
    assert p.withheld == () and p.breached and p.usable == ("b",)


def test_before_the_first_listing_nothing_is_known_of_the_floor() -> None:
    p = publish(MODEL, None, [], [ex("a")], [], floor=2, now=T0)
    assert p.usable is None and not p.breached and p.ignore == ["a"]


def _published(usable_tags: tuple[str, ...], floor: int = 2) -> Publication:
    """a, b and c listed; those not in ``usable_tags`` excluded by an operator."""
    listing = [Listed(t) for t in ("a", "b", "c")]
    others = [ex(t) for t in ("a", "b", "c") if t not in usable_tags]
    return publish(MODEL, listing, [], others, [], floor=floor, now=T0)


@pytest.mark.parametrize(
    ("usable_tags", "tag", "force", "allowed", "breaches"),
    [
        (("a", "b", "c"), "a", False, True, False),  # 2 left, floor 2
        (("a", "b"), "a", False, False, True),  # 1 left: refused
        (("a", "b"), "a", True, True, True),  # forced: allowed, breaches
        (("a",), "b", False, True, False),  # b is not usable: lowers nothing
        (("a", "b"), "c", False, True, False),
    ],
)
def test_an_exclusion_that_lowers_usable_below_the_floor_is_refused_unless_forced(
    usable_tags: tuple[str, ...], tag: str, force: bool, allowed: bool, breaches: bool
) -> None:
    check = check_exclusion(_published(usable_tags), ex(tag, since=T0), force=force, now=T0)
    assert (check.allowed, check.breaches) == (allowed, breaches)
    if not allowed:
        assert check.message == (
            f"excluding {tag} leaves 1 usable endpoint(s) of {MODEL} (now 2), below its "
            "capacity floor of 2"
        )


def test_a_base_slug_exclusion_counts_every_endpoint_it_names() -> None:
    listing = (Listed("x/one"), Listed("x/two"), Listed("y"))
    before = publish(MODEL, listing, [], [], [], floor=2, now=T0)
    check = check_exclusion(before, ex("x"), force=False, now=T0)
    assert not check.allowed and check.usable_after == 1


def test_an_exclusion_that_keeps_the_floor_only_by_withholding_a_quarantine_is_refused() -> None:
    # a, b, c listed, c quarantined, floor 2: excluding a would publish c again to keep 2 usable
    listing = [Listed(t) for t in ("a", "b", "c")]
    before = publish(MODEL, listing, [], [], [q("c", 1, 9)], floor=2, now=T0)
    assert before.usable == ("a", "b") and before.withheld == ()
    check = check_exclusion(before, ex("a"), force=False, now=T0)
    assert not check.allowed and not check.breaches
    assert (check.usable_before, check.usable_after, check.withholds) == (2, 2, ("c",))
    assert check.message == (
        f"excluding a would withhold the quarantine of c from the published list: {MODEL} would "
        "keep its capacity floor of 2 only that way (2 usable endpoint(s), now 2)"
    )
    forced = check_exclusion(before, ex("a"), force=True, now=T0)
    assert forced.allowed and not forced.breaches and forced.withholds == ("c",)


def test_an_exclusion_below_the_floor_even_with_withholding_says_both() -> None:
    listing = [Listed(t) for t in ("a", "b", "c")]
    before = publish(MODEL, listing, [], [ex("b")], [q("c", 1, 9)], floor=3, now=T0)
    assert before.usable == ("a", "c") and [e.tag for e in before.withheld] == ["c"]
    check = check_exclusion(before, ex("a"), force=False, now=T0)
    assert not check.allowed and check.breaches and check.usable_after == 1
    # c is withheld already: there is nothing more to withhold
    assert check.message == (
        f"excluding a leaves 1 usable endpoint(s) of {MODEL} (now 2), below its capacity floor of 3"
    )


def test_an_exclusion_of_a_withheld_quarantine_counts_the_capacity_it_takes() -> None:
    # c's quarantine is withheld for the floor; an operator excluding c takes it for good
    listing = [Listed(t) for t in ("a", "b", "c")]
    before = publish(MODEL, listing, [], [ex("b")], [q("c", 1, 9)], floor=2, now=T0)
    check = check_exclusion(before, ex("c"), force=False, now=T0)
    assert not check.allowed and check.usable_after == 1 and check.withholds == ()


def test_an_admitted_forced_breach_opens_the_episode_with_a_row_that_describes_it() -> None:
    listing = [Listed("a"), Listed("b")]
    before = publish(MODEL, listing, [], [], [], floor=2, now=T0)
    entry = ex("a", since=T0, id=41)
    check = check_exclusion(before, entry, force=True, now=T0)
    admitted = admit_exclusion(
        before, FloorRecord(), entry, check, force=True, actor="cli:ops", policy_version="p-9",
        now=T0,
    )  # fmt: skip
    assert admitted.event.kind is EventKind.exclusion_added
    assert admitted.event.detail["id"] == 41 and admitted.event.detail["usable_after"] == 1
    opening = admitted.floor.open_episode
    assert opening is not None and opening.kind is EventKind.floor_breached
    assert opening.detail["action"] == {
        "event": "exclusion_added", "exclusion_id": 41, "tag": "a", "force": True,
        "actor": "cli:ops",
    }  # fmt: skip
    assert opening.detail["policy_version"] == "p-9" and opening.detail["alert"] is True
    assert "cli:ops forced the exclusion of a (id 41)" in opening.detail["why"]
    already = admit_exclusion(
        before, FloorRecord(episode_open=True), entry, check, force=True, actor="cli:ops",
        policy_version="p-9", now=T0,
    )  # fmt: skip
    assert already.floor.open_episode is None  # one row per episode


def test_a_forced_withholding_exclusion_withholds_with_rows_naming_the_action() -> None:
    listing = [Listed(t) for t in ("a", "b", "c")]
    before = publish(MODEL, listing, [], [], [q("c", 1, 9)], floor=2, now=T0)
    entry = ex("a", since=T0, id=5)
    check = check_exclusion(before, entry, force=True, now=T0)
    admitted = admit_exclusion(
        before, FloorRecord(), entry, check, force=True, actor="api", policy_version=None, now=T0
    )
    [(ident, held)] = admitted.floor.withhold
    assert ident == 9 and held.kind is EventKind.floor_held and held.tag == "c"
    assert held.detail["action"]["exclusion_id"] == 5 and admitted.floor.open_episode is None


def test_a_removal_is_one_row_naming_what_was_removed() -> None:
    event = exclusion_removed(ex("a", id=3), reason="resolved")
    assert event.kind is EventKind.exclusion_removed and event.tag == "a"
    assert event.detail == {"id": 3, "reason": "resolved", "was": "runtime a"}


def test_before_the_first_listing_an_exclusion_needs_force() -> None:
    before = publish(MODEL, None, [], [], [], floor=2, now=T0)
    assert not check_exclusion(before, ex("a"), force=False, now=T0).allowed
    assert check_exclusion(before, ex("a"), force=True, now=T0).allowed


def test_reconcile_opens_an_episode_once_and_closes_it_when_the_floor_is_met() -> None:
    breached = publish(MODEL, [Listed("a")], [], [], [], floor=2, now=T0)
    changes = reconcile(breached, FloorRecord())
    assert changes.open_episode is not None
    assert changes.open_episode.kind is EventKind.floor_breached
    assert changes.open_episode.detail["usable"] == 1
    assert reconcile(breached, FloorRecord(episode_open=True)).empty
    met = publish(MODEL, [Listed("a"), Listed("b")], [], [], [], floor=2, now=T0)
    closing = reconcile(met, FloorRecord(episode_open=True))
    assert closing.close_episode is not None and closing.open_episode is None


def test_reconcile_records_each_withholding_and_republishing_once() -> None:
    listing = [Listed(t) for t in ("a", "b")]
    p = publish(MODEL, listing, [], [], [q("a", 1, 7)], floor=2, now=T0)
    changes = reconcile(p, FloorRecord())
    [(ident, event)] = changes.withhold
    assert ident == 7 and event.kind is EventKind.floor_held and event.tag == "a"
    assert reconcile(p, FloorRecord({7: "a"})).empty
    roomy = publish(MODEL, [*listing, Listed("c")], [], [], [q("a", 1, 7)], floor=2, now=T0)
    [(ident, event)] = reconcile(roomy, FloorRecord({7: "a"})).republish
    assert ident == 7 and event.kind is EventKind.republished
