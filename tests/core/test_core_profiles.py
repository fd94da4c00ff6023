"""Task profiles (issue 36): each requirement an endpoint misses is an entry of layer
``requirement`` naming it and the measured value; the floor withholds those entries first
(fewest missed first, then by tag), so a profile's list never breaches a floor the same list
without requirements keeps."""

from __future__ import annotations

from datetime import timedelta

from core_builders import MODEL, T0
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.config.settings import QUANTIZATION_ORDER
from canary.core.controls import NO_CONTROLS, Controls
from canary.core.document import ignore_document
from canary.core.floor import publish
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer, Pricing
from canary.core.profiles import MIN_SAMPLES, Measured, Profile, misses, publish_for_profile

ORDER = tuple(QUANTIZATION_ORDER)
DAY = timedelta(days=1)


def ep(
    tag: str,
    *,
    caps: tuple[str, ...] = ("structured_outputs", "tools"),
    context: int | None = 131072,
    prompt: float = 1e-6,
    completion: float = 2e-6,
    quantization: str | None = "fp8",
) -> Listed:
    return Listed(tag, None, frozenset(caps), None, context, Pricing(prompt, completion),
                  quantization)  # fmt: skip


def profile(**rules: object) -> Profile:
    return Profile("chat", quantization_order=ORDER, settings_hash="s-1", **rules)  # type: ignore[arg-type]


def q(tag: str, *causes: str, hours: int = 1) -> Exclusion:
    since = T0 - timedelta(hours=hours)
    return Exclusion(MODEL, tag, Layer.quarantine, "q", since=since, until=since + DAY,
                     causes=causes, id=100 - hours)  # fmt: skip


def by_profile(
    listing: tuple[Listed, ...],
    chosen: Profile,
    measured: dict[str, Measured] | None = None,
    *,
    quarantines: tuple[Exclusion, ...] = (),
    floor: int = 2,
    needs: frozenset[str] = frozenset(),
    controls: Controls = NO_CONTROLS,
) -> object:
    return publish_for_profile(
        MODEL, listing, [], [], quarantines, profile=chosen, extra_needs=needs,
        measured=measured or {}, floor=floor, now=T0, controls=controls,
    )  # fmt: skip


def test_a_slow_p95_is_named_with_its_measure_and_needs_twenty_samples() -> None:
    slow = Measured(ttft_p95_s=4.04, ttft_samples=144)
    assert misses(profile(max_ttft_p95_s=2.0), ep("a"), slow) == [
        ("max_ttft_p95_s", "p95 ttft 4.0 s > 2 s over 24 h, 144 samples")
    ]
    few = Measured(ttft_p95_s=4.0, ttft_samples=MIN_SAMPLES - 1)
    assert misses(profile(max_ttft_p95_s=2.0), ep("a"), few) == []
    assert misses(profile(max_ttft_p95_s=2.0), ep("a"), None) == []


def test_each_requirement_names_what_was_measured() -> None:
    chosen = profile(
        needs=frozenset({"tools"}), min_context_length=65536, max_price_prompt=0.5,
        max_price_completion=1.0, min_quantization="fp8", max_error_rate=0.1,
    )  # fmt: skip
    bad = ep("a", caps=(), context=32768, prompt=3e-6, completion=3e-6, quantization="fp4")
    measured = Measured(errors=5, probes=20)
    assert misses(chosen, bad, measured) == [
        ("needs", "tools not advertised"),
        ("min_context_length", "context length 32768 < 65536"),
        ("max_price", "prompt price 3 > 0.5 USD/M tokens"),
        ("max_price", "completion price 3 > 1 USD/M tokens"),
        ("min_quantization", "fp4 below fp8"),
        ("max_error_rate",
         "5 of 20 probes failed (5xx, timeout, disconnect) = 25.0% > 10.0% over 24 h"),
    ]  # fmt: skip
    cheap = ep("b", prompt=1e-7, completion=1e-7)
    assert misses(chosen, cheap, Measured(errors=19, probes=19)) == []  # under 20 probes


def test_unknown_quantization_is_allowed_unless_the_profile_excludes_it() -> None:
    for quantization in (None, "unknown", "q5_k_m"):
        assert (
            misses(profile(min_quantization="fp8"), ep("a", quantization=quantization), None) == []
        )
        assert misses(
            profile(min_quantization="fp8", unknown_quantization="exclude"),
            ep("a", quantization=quantization),
            None,
        ) == [("min_quantization", f"quantization {quantization or 'unknown'}")]


def test_the_entries_are_layer_requirement_and_the_plain_list_is_unchanged() -> None:
    listing = (ep("a"), ep("b"), ep("c"), ep("slow"))
    slow = {"slow": Measured(ttft_p95_s=4.0, ttft_samples=30)}
    published = by_profile(listing, profile(max_ttft_p95_s=2.0), slow)
    plain = publish(MODEL, listing, [], [], [], floor=2, now=T0)
    assert plain.ignore == [] and published.ignore == ["slow"]  # type: ignore[attr-defined]
    document = ignore_document(
        published, generated_at=T0, stale=False, policy_version="p-1",  # type: ignore[arg-type]
        needs=(), profile=profile(max_ttft_p95_s=2.0),
    )  # fmt: skip
    [entry] = document["entries"]
    assert entry["layer"] == "requirement"
    assert entry["reason"] == "max_ttft_p95_s: p95 ttft 4.0 s > 2 s over 24 h, 30 samples"
    assert document["profile"] == {"name": "chat", "settings_hash": "s-1"}
    assert "profile" not in ignore_document(
        plain, generated_at=T0, stale=False, policy_version="p-1"
    )


def test_a_price_ceiling_all_but_one_exceed_keeps_the_floor_by_withholding() -> None:
    listing = (ep("cheap", prompt=1e-7), ep("d", prompt=9e-6), ep("b", prompt=9e-6),
               ep("c", prompt=9e-6))  # fmt: skip
    published = by_profile(listing, profile(max_price_prompt=1.0))
    assert not published.breached  # type: ignore[attr-defined]
    assert sorted(published.usable) == ["b", "cheap"]  # type: ignore[attr-defined]
    assert [e.tag for e in published.withheld] == ["b"]  # type: ignore[attr-defined]
    assert published.ignore == ["c", "d"]  # type: ignore[attr-defined]


def test_requirement_entries_go_before_quarantines_fewest_missed_first() -> None:
    listing = (ep("a"), ep("b", caps=(), context=10), ep("c", context=10), ep("d"))
    chosen = profile(min_context_length=100, needs=frozenset())
    quarantined = (q("a", "ttft"), q("d", "ttft"))
    published = by_profile(listing, chosen, quarantines=quarantined, floor=2)
    # b and c miss one requirement each: both withheld (by tag), the quarantines stay
    assert {e.tag for e in published.withheld} == {"b", "c"}  # type: ignore[attr-defined]
    assert published.ignore == ["a", "d"]  # type: ignore[attr-defined]
    two = profile(min_context_length=100, max_price_prompt=5.0)
    listing = (ep("a"), ep("b", context=10, prompt=1e-5), ep("c", context=10))
    published = by_profile(listing, two, floor=2)
    assert [e.tag for e in published.withheld] == ["c"]  # type: ignore[attr-defined]


def test_profile_needs_cut_quarantines_and_exclude_what_does_not_advertise() -> None:
    listing = (ep("a"), ep("b"), ep("notools", caps=("structured_outputs",)))
    chosen = profile(needs=frozenset({"tools"}))
    published = by_profile(listing, chosen, quarantines=(q("a", "schema"),))
    assert published.ignore == ["notools"]  # type: ignore[attr-defined]  # schema not needed
    both = by_profile(listing, chosen, quarantines=(q("a", "schema"),),
                      needs=frozenset({"structured_outputs"}))  # fmt: skip
    assert "a" in both.ignore or "a" in {e.tag for e in both.withheld}  # type: ignore[attr-defined]
    assert both.needs == {"tools", "structured_outputs"}  # type: ignore[attr-defined]


_TAGS = [f"e{i}" for i in range(6)]


@st.composite
def fleets(
    draw: st.DrawFn,
) -> tuple[tuple[Listed, ...], dict[str, Measured], tuple[Exclusion, ...]]:
    tags = draw(st.lists(st.sampled_from(_TAGS), unique=True, max_size=6))
    listing = tuple(
        ep(
            t,
            caps=tuple(draw(st.sets(st.sampled_from(["structured_outputs", "tools"])))),
            context=draw(st.sampled_from([None, 1000, 100000])),
            prompt=draw(st.sampled_from([1e-7, 5e-6])),
            quantization=draw(st.sampled_from([None, "fp4", "fp8", "bf16"])),
        )
        for t in tags
    )
    measured = {
        t: Measured(draw(st.sampled_from([None, 1.0, 9.0])), draw(st.sampled_from([5, 30])),
                    draw(st.integers(0, 30)), 30)
        for t in tags
    }  # fmt: skip
    quarantined = tuple(
        q(t, draw(st.sampled_from(["ttft", "schema", "tools"])), hours=i + 1)
        for i, t in enumerate(draw(st.lists(st.sampled_from(_TAGS), unique=True)))
    )
    return listing, measured, quarantined


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    return profile(
        needs=frozenset(draw(st.sets(st.sampled_from(["structured_outputs", "tools"])))),
        max_ttft_p95_s=draw(st.sampled_from([None, 2.0])),
        min_context_length=draw(st.sampled_from([None, 50000])),
        max_price_prompt=draw(st.sampled_from([None, 1.0])),
        min_quantization=draw(st.sampled_from([None, "fp8"])),
        unknown_quantization=draw(st.sampled_from(["allow", "exclude"])),
        max_error_rate=draw(st.sampled_from([None, 0.2])),
    )


@settings(max_examples=examples(100), deadline=None)
@given(fleets(), profiles(), st.integers(0, 4))
def test_requirements_never_breach_a_floor_the_list_without_them_keeps(
    fleet: tuple[tuple[Listed, ...], dict[str, Measured], tuple[Exclusion, ...]],
    chosen: Profile,
    floor: int,
) -> None:
    listing, measured, quarantined = fleet
    published = by_profile(listing, chosen, measured, quarantines=quarantined, floor=floor)
    without = by_profile(listing, profile(needs=chosen.needs), quarantines=quarantined, floor=floor)
    usable = published.usable or ()  # type: ignore[attr-defined]
    assert len(usable) >= min(floor, len(without.usable or ()))  # type: ignore[attr-defined]
    assert published.breached == without.breached  # type: ignore[attr-defined]
    # what is withheld first is requirement entries; a quarantine only once none is left
    withheld = published.withheld  # type: ignore[attr-defined]
    layers = [e.layer for e in withheld]
    assert layers == sorted(layers, key=lambda layer: layer is Layer.quarantine)
    # every published requirement entry names a listed endpoint and one requirement missed
    for entry in published.entries:  # type: ignore[attr-defined]
        if entry.layer is Layer.requirement:
            assert entry.reason.startswith(entry.causes[0] + ": ")
