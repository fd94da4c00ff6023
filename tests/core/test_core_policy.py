"""Policy rules and their version hash."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from canary.config.settings import Policy
from canary.core.model import Mode
from canary.core.policy import PolicyRules, policy_version


def test_version_is_short_stable_and_prefixed() -> None:
    version = policy_version(PolicyRules(), {"ttft_threshold_s": 10})
    assert re.fullmatch(r"p-[0-9a-f]{10}", version)
    assert version == policy_version(PolicyRules(), {"ttft_threshold_s": 10})


def test_version_ignores_number_spelling_and_key_order() -> None:
    a = policy_version(PolicyRules(ladder_days=(1, 3, 7)), {"x": 1, "probes": {"a": "1", "b": "2"}})
    b = policy_version(
        PolicyRules(ladder_days=(1.0, 3.0, 7.0)), {"probes": {"b": "2", "a": "1"}, "x": 1}
    )
    assert a == b
    assert policy_version(PolicyRules(), {"ttft_threshold_s": 10, "floors": {"m": [2]}}) == (
        policy_version(PolicyRules(), {"ttft_threshold_s": 10.0, "floors": {"m": [2.0]}})
    )
    assert policy_version(PolicyRules(), {"ttft_threshold_s": 10}) != (
        policy_version(PolicyRules(), {"ttft_threshold_s": 10.5})
    )


@pytest.mark.parametrize(
    "changed",
    [
        PolicyRules(failing_rounds=3),
        PolicyRules(recovery_rounds=3),
        PolicyRules(ladder_days=(1, 3)),
        PolicyRules(ladder_reset_days=7),
        PolicyRules(model_wide_share=0.6),
        PolicyRules(min_look_gap_minutes=3),
        PolicyRules(mode=Mode.enforce),
    ],
)
def test_every_rule_changes_the_version(changed: PolicyRules) -> None:
    assert policy_version(changed) != policy_version(PolicyRules())


def test_probe_checksums_change_the_version() -> None:
    assert policy_version(PolicyRules(), {"probes": {"refusal": "abc"}}) != policy_version(
        PolicyRules(), {"probes": {"refusal": "abd"}}
    )


def test_rules_from_settings_and_mode_string() -> None:
    rules = PolicyRules.of(Policy(failing_rounds=3, ladder_days=(2, 4)), "enforce", 30)
    assert rules.failing_rounds == 3 and rules.ladder_days == (2.0, 4.0)
    assert rules.mode is Mode.enforce
    assert PolicyRules.of(Policy(), "observe", 30) == PolicyRules()


@pytest.mark.parametrize(
    ("interval", "setting", "gap"),
    [(30, None, 10.0), (20, None, 10.0), (12, None, 6.0), (0.5, None, 0.25), (30, 25, 25.0),
     (30, 0, 0.0)],
)  # fmt: skip
def test_the_look_gap_defaults_to_ten_minutes_or_half_the_interval(
    interval: float, setting: float | None, gap: float
) -> None:
    rules = PolicyRules.of(Policy(min_look_gap_minutes=setting), "observe", interval)
    assert rules.min_look_gap_minutes == gap
    assert rules.min_look_gap == timedelta(minutes=gap)


def test_the_look_gap_and_publish_controls_are_part_of_the_policy_version() -> None:
    assert policy_version(PolicyRules(min_look_gap_minutes=5)) != policy_version(PolicyRules())
    assert policy_version(PolicyRules(min_look_gap_minutes=10)) == policy_version(PolicyRules())
    models = [{"id": "a/b", "publish_controls": True}]
    assert policy_version(PolicyRules(), {"models": models}) != policy_version(
        PolicyRules(), {"models": [{"id": "a/b", "publish_controls": False}]}
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"failing_rounds": 0}, {"recovery_rounds": 0}, {"ladder_days": ()}, {"ladder_days": (1, 0)},
     {"ladder_reset_days": 0}, {"model_wide_share": 0}, {"model_wide_share": 1.5},
     {"min_look_gap_minutes": -1}],
)  # fmt: skip
def test_invalid_rules_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        PolicyRules(**kwargs)
