"""diff_snapshots and snapshot_of: tables of before/after snapshots and the changes they give."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from canary.core.drift import DriftChange, diff_snapshots, snapshot_of
from canary.core.model import Endpoint, Pricing

MODEL = "acme/roleplay-1"
ORDER = ("int4", "fp4", "mxfp4", "nvfp4", "fp6", "int8", "fp8", "mxfp8", "fp16", "bf16", "fp32")
BASE = Endpoint(
    model=MODEL,
    tag="alpha",
    provider_name="Alpha",
    pricing=Pricing(prompt=0.0000002, completion=0.0000006),  # 0.2 / 0.6 USD per million
    supported_parameters=("temperature", "response_format", "max_tokens", "structured_outputs"),
    quantization="fp8",
    context_length=32768,
    max_completion_tokens=4096,
    status=0,
    uptime_last_30m=99.5,
    latency_last_30m={"p50": 640.0, "p75": 900.0, "p90": 1500.0, "p99": 4000.0},
)


def snaps(*endpoints: Endpoint) -> dict[str, dict[str, Any]]:
    return {e.tag: snapshot_of(e) for e in endpoints}


def fleet(**changes: Any) -> dict[str, dict[str, Any]]:
    """alpha (optionally changed), beta, gamma: three endpoints, above a capacity floor of 2."""
    return snaps(replace(BASE, **changes), replace(BASE, tag="beta"), replace(BASE, tag="gamma"))


def diff(before: Any, after: Any, **kw: Any) -> tuple[DriftChange, ...]:
    args: dict[str, Any] = {
        "max_price": (1.0, 2.0),
        "min_quantization": "fp8",
        "capacity_floor": 2,
        "quantization_order": ORDER,
    }
    args.update(kw)
    return diff_snapshots(MODEL, before, after, **args)


def test_snapshot_keeps_the_tracked_metadata_with_sorted_parameters() -> None:
    snap = snapshot_of(BASE)
    assert snap == {
        "pricing": {"prompt": 0.0000002, "completion": 0.0000006},
        "quantization": "fp8",
        "context_length": 32768,
        "max_completion_tokens": 4096,
        "supported_parameters": [
            "max_tokens",
            "response_format",
            "structured_outputs",
            "temperature",
        ],
        "status": 0,
        "uptime_last_30m": 99.5,
        "latency_last_30m": {"p50": 640.0, "p75": 900.0, "p90": 1500.0, "p99": 4000.0},
        "service_tier": None,
    }


def test_first_round_ever_gives_no_changes() -> None:
    assert diff(None, fleet()) == ()


def test_after_an_empty_listing_everything_listed_appeared() -> None:
    changes = diff({}, fleet())
    appeared = {c.tag for c in changes if c.field == "presence"}
    assert appeared == set(fleet())
    assert all(c.old is None for c in changes if c.field == "presence")


def test_identical_snapshots_give_no_changes() -> None:
    assert diff(fleet(), fleet()) == ()


def test_a_change_is_reported_once_then_not_again() -> None:
    r1, r2 = fleet(), fleet(quantization="fp16")
    assert len(diff(r1, r2)) == 1
    assert diff(r2, r2) == ()  # the next round sees the same metadata: nothing new


def test_uptime_and_latency_jitter_make_no_change() -> None:
    after = fleet(uptime_last_30m=71.0, latency_last_30m={"p50": 9000.0, "p99": 20000.0})
    assert diff(fleet(), after) == ()


# (changes to alpha, field, old, new, alert, reason)
FIELD_CASES = [
    ({"quantization": "fp16"}, "quantization", "fp8", "fp16", False, None),
    ({"quantization": "int4"}, "quantization", "fp8", "int4", True, "quantization int4 < floor fp8"),  # noqa: E501
    ({"quantization": "unknown"}, "quantization", "fp8", "unknown", False, None),
    ({"quantization": None}, "quantization", "fp8", None, False, None),
    ({"context_length": 8192}, "context_length", 32768, 8192, False, None),
    ({"max_completion_tokens": 1024}, "max_completion_tokens", 4096, 1024, False, None),
    ({"status": -2}, "status", 0, -2, False, None),
    (
        {"pricing": Pricing(prompt=0.0000003, completion=0.0000006)},
        "pricing.prompt", 0.0000002, 0.0000003, False, None,
    ),
    (
        {"pricing": Pricing(prompt=0.0000015, completion=0.0000006)},
        "pricing.prompt", 0.0000002, 0.0000015, True, "prompt price 1.5 > cap 1 USD/M tokens",
    ),
    (
        {"pricing": Pricing(prompt=0.0000002, completion=0.0000025)},
        "pricing.completion", 0.0000006, 0.0000025,
        True, "completion price 2.5 > cap 2 USD/M tokens",
    ),
    (
        {"supported_parameters": (*BASE.supported_parameters, "seed")},
        "supported_parameters",
        ["max_tokens", "response_format", "structured_outputs", "temperature"],
        ["max_tokens", "response_format", "seed", "structured_outputs", "temperature"],
        False, None,
    ),
    (
        {"supported_parameters": ("temperature", "max_tokens", "structured_outputs")},
        "supported_parameters",
        ["max_tokens", "response_format", "structured_outputs", "temperature"],
        ["max_tokens", "structured_outputs", "temperature"],
        True, "stopped advertising response_format",
    ),
    (
        {"supported_parameters": ("temperature", "max_tokens")},
        "supported_parameters",
        ["max_tokens", "response_format", "structured_outputs", "temperature"],
        ["max_tokens", "temperature"],
        True, "stopped advertising response_format, structured_outputs",
    ),
    (
        {"supported_parameters": tuple(reversed(BASE.supported_parameters))},
        "supported_parameters", None, None, None, None,
    ),  # same set in another order: no change
]  # fmt: skip


@pytest.mark.parametrize(("changes", "field", "old", "new", "alert", "reason"), FIELD_CASES)
def test_each_field_change(
    changes: dict[str, Any], field: str, old: Any, new: Any, alert: Any, reason: Any
) -> None:
    got = diff(fleet(), fleet(**changes))
    if alert is None:
        assert got == ()
        return
    assert got == (DriftChange(MODEL, "alpha", field, old, new, alert, reason),)


def test_price_exactly_at_the_cap_is_no_alert() -> None:
    # Per-token floats times a million carry noise: exactly at a 2.5 cap is not above it.
    # 0.000000013 USD/token is 0.013000000000000001 per million once multiplied.
    (change,) = diff(
        fleet(), fleet(pricing=Pricing(0.0000002, 0.000000013)), max_price=(1.0, 0.013)
    )
    assert (change.field, change.alert) == ("pricing.completion", False)


def test_no_cap_means_no_price_alert() -> None:
    (change,) = diff(fleet(), fleet(pricing=Pricing(0.001, 0.0000006)), max_price=None)
    assert change.alert is False
    (change,) = diff(fleet(), fleet(pricing=Pricing(0.001, 0.0000006)), max_price=(None, 2.0))
    assert change.alert is False


def test_no_quantization_floor_means_no_quantization_alert() -> None:
    (change,) = diff(fleet(), fleet(quantization="int4"), min_quantization=None)
    assert change.alert is False


def test_both_prices_changing_give_two_changes() -> None:
    got = diff(fleet(), fleet(pricing=Pricing(0.000003, 0.000004)))
    assert [(c.field, c.alert) for c in got] == [
        ("pricing.prompt", True),
        ("pricing.completion", True),
    ]


def test_endpoint_that_vanishes_is_an_alert() -> None:
    before = fleet()
    after = {t: s for t, s in before.items() if t != "beta"}
    assert diff(before, after) == (
        DriftChange(MODEL, "beta", "presence", "present", None, True, "vanished"),
    )


def test_endpoint_that_appears_is_a_change_without_alert() -> None:
    after = {**fleet(), "delta": snapshot_of(replace(BASE, tag="delta"))}
    assert diff(fleet(), after) == (
        DriftChange(MODEL, "delta", "presence", None, "present", False, None),
    )


def test_endpoint_that_appears_above_the_cap_or_below_the_floor_is_an_alert() -> None:
    newcomer = replace(BASE, tag="delta", quantization="fp4", pricing=Pricing(0.000005, 0.0000006))
    (change,) = diff(fleet(), {**fleet(), "delta": snapshot_of(newcomer)})
    assert (change.field, change.new, change.alert) == ("presence", "present", True)
    assert change.reason == "prompt price 5 > cap 1 USD/M tokens; quantization fp4 < floor fp8"


def test_falling_below_the_capacity_floor_is_recorded_and_left_to_the_floor_episode() -> None:
    before = fleet()
    after = {"alpha": before["alpha"]}
    got = diff(before, after)
    assert [(c.tag, c.field) for c in got] == [
        ("beta", "presence"),
        ("gamma", "presence"),
        (None, "capacity"),
    ]
    assert got[-1] == DriftChange(
        MODEL, None, "capacity", 3, 1, False, "1 endpoints < capacity floor 2"
    )


def test_losing_an_endpoint_above_the_floor_is_no_capacity_change() -> None:
    before = fleet()
    after = {t: s for t, s in before.items() if t != "gamma"}  # 3 -> 2, floor 2
    assert [c.field for c in diff(before, after)] == ["presence"]


def test_capacity_back_at_the_floor_is_a_change_without_alert() -> None:
    before = {"alpha": snapshot_of(BASE)}
    after = fleet()
    got = diff(before, after)
    assert got[-1] == DriftChange(MODEL, None, "capacity", 1, 3, False, None)
    assert [c.alert for c in got] == [False, False, False]


def test_capacity_change_is_reported_once() -> None:
    before, after = fleet(), {"alpha": snapshot_of(BASE)}
    assert any(c.field == "capacity" for c in diff(before, after))
    assert diff(after, after) == ()


def test_snapshot_missing_a_key_is_not_compared() -> None:
    old = fleet()
    del old["alpha"]["max_completion_tokens"]  # an older snapshot format
    assert diff(old, fleet(max_completion_tokens=1)) == ()


def test_changes_are_ordered_by_tag_and_serialise() -> None:
    before = fleet()
    after = fleet(quantization="fp16")
    after["beta"] = snapshot_of(replace(BASE, tag="beta", context_length=1))
    got = diff(before, after)
    assert [(c.tag, c.field) for c in got] == [
        ("alpha", "quantization"),
        ("beta", "context_length"),
    ]
    assert got[0].as_dict() == {
        "model": MODEL, "provider": "alpha", "field": "quantization",
        "old": "fp8", "new": "fp16", "alert": False, "reason": None,
    }  # fmt: skip


def test_keys_that_are_not_tracked_are_ignored() -> None:
    # The store's snapshots carry more (provider_name): those keys never make a change.
    before = {t: {**s, "provider_name": "Alpha"} for t, s in fleet().items()}
    after = {t: {**s, "provider_name": "Alpha Inc."} for t, s in fleet().items()}
    assert diff(before, after) == ()
