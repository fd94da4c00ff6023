"""Policy rules and their version hash."""

from __future__ import annotations

import re
from typing import Any

import pytest

from canary.core.model import Mode
from canary.core.policy import PolicyRules, policy_version
from canary.settings import Policy


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
    rules = PolicyRules.of(Policy(failing_rounds=3, ladder_days=(2, 4)), "enforce")
    assert rules.failing_rounds == 3 and rules.ladder_days == (2.0, 4.0)
    assert rules.mode is Mode.enforce
    assert PolicyRules.of(Policy(), "observe") == PolicyRules()


@pytest.mark.parametrize(
    "kwargs",
    [{"failing_rounds": 0}, {"recovery_rounds": 0}, {"ladder_days": ()}, {"ladder_days": (1, 0)},
     {"ladder_reset_days": 0}, {"model_wide_share": 0}, {"model_wide_share": 1.5}],
)  # fmt: skip
def test_invalid_rules_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        PolicyRules(**kwargs)
