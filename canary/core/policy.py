"""The numbers of the quarantine rules, and the policy version every decision records.

``PolicyRules`` is the pure core's copy of the ``[policy]`` settings plus the mode; the capacity
floor is per model and is passed to :func:`canary.core.quarantine.decide_model` separately.

The policy version hashes the rules, everything else that can change a verdict or a decision
(the caller passes it as ``extra``: thresholds, samples, timeouts, ``max_tokens``, languages,
floors, controls, the budget, the probe checksums) and :data:`RULES_REVISION`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from pydantic import JsonValue

from canary.core.model import Mode

# Bumped whenever the code of a rule changes what it decides: the policy version changes with it,
# so a decision always says which rules produced it. tests/core/test_core_rules_revision.py pins a
# hash of the rule modules' sources to this number: a rule change without a bump fails there.
# 4: confirmation of failures, a stall counted as slowness, language/hygiene evidence from every
# answer, the exclusion check counting withheld quarantines, evidence capped per streak.
# 6: persistent language mixing flagged at one foreign language in 2 and a third of the judged
# answers (was half of them).
# 7: a look counts only at least min_look_gap_minutes after the previous counted one (evidence
# stored as looks); a filtered answer is a refusal look, its own probe's contract inconclusive;
# positive controls never usable capacity (the control layer); a needs list counts only the
# endpoints that advertise its needs.
# 8: an endpoint in a maintenance window is frozen (its results decide nothing) and left out of
# the model-wide rule.
# 9: a focused check (an app's report) is a look: its confirmed failures count, its passes not.
RULES_REVISION = 9

DEFAULT_LOOK_GAP_MINUTES = 10.0  # the gap's default, at most: half the interval when shorter


def default_look_gap_minutes(interval_minutes: float) -> float:
    """The smaller of 10 minutes and half the interval (an accelerated clock keeps working)."""
    return min(DEFAULT_LOOK_GAP_MINUTES, interval_minutes / 2)


class PolicyNumbers(Protocol):
    """What :meth:`PolicyRules.of` reads: ``canary.config.settings.Policy`` has this shape."""

    @property
    def failing_rounds(self) -> int: ...
    @property
    def recovery_rounds(self) -> int: ...
    @property
    def ladder_days(self) -> tuple[float, ...]: ...
    @property
    def ladder_reset_days(self) -> float: ...
    @property
    def model_wide_share(self) -> float: ...
    @property
    def streak_max_age_hours(self) -> float: ...
    @property
    def min_look_gap_minutes(self) -> float | None: ...


@dataclass(frozen=True)
class PolicyRules:
    failing_rounds: int = 2  # conclusive failing rounds in a row before a quarantine
    recovery_rounds: int = 2  # fully passing rounds in a row that end a quarantine early
    ladder_days: tuple[float, ...] = (1.0, 3.0, 7.0)  # 1st, 2nd, 3rd-and-later quarantine
    ladder_reset_days: float = 14.0  # no new quarantine for this long: the ladder restarts
    model_wide_share: float = 0.5  # a contract failing on MORE than this share is model-wide
    streak_max_age_hours: float = 6.0  # a contract's fail older than this starts a new count
    # a look counts only when its round started at least this long after the previous counted one
    min_look_gap_minutes: float = DEFAULT_LOOK_GAP_MINUTES
    mode: Mode = Mode.observe

    def __post_init__(self) -> None:
        # Normalise numbers so that (1, 3, 7) and (1.0, 3.0, 7.0) give one policy version.
        object.__setattr__(self, "ladder_days", tuple(float(d) for d in self.ladder_days))
        object.__setattr__(self, "ladder_reset_days", float(self.ladder_reset_days))
        object.__setattr__(self, "model_wide_share", float(self.model_wide_share))
        object.__setattr__(self, "streak_max_age_hours", float(self.streak_max_age_hours))
        object.__setattr__(self, "min_look_gap_minutes", float(self.min_look_gap_minutes))
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.failing_rounds < 1:
            raise ValueError(f"failing_rounds must be at least 1, not {self.failing_rounds}")
        if self.recovery_rounds < 1:
            raise ValueError(f"recovery_rounds must be at least 1, not {self.recovery_rounds}")
        if not self.ladder_days or any(d <= 0 for d in self.ladder_days):
            raise ValueError(f"ladder_days must be positive and non-empty, not {self.ladder_days}")
        if self.ladder_reset_days <= 0:
            raise ValueError(f"ladder_reset_days must be positive, not {self.ladder_reset_days}")
        if not 0 < self.model_wide_share <= 1:
            raise ValueError(f"model_wide_share must be in (0, 1], not {self.model_wide_share}")
        if self.streak_max_age_hours <= 0:
            raise ValueError(
                f"streak_max_age_hours must be positive, not {self.streak_max_age_hours}"
            )
        if self.min_look_gap_minutes < 0:
            raise ValueError(
                f"min_look_gap_minutes must not be negative, not {self.min_look_gap_minutes}"
            )

    @property
    def streak_max_age(self) -> timedelta:
        return timedelta(hours=self.streak_max_age_hours)

    @property
    def min_look_gap(self) -> timedelta:
        return timedelta(minutes=self.min_look_gap_minutes)

    @classmethod
    def of(cls, policy: PolicyNumbers, mode: Mode | str, interval_minutes: float) -> PolicyRules:
        """Build the rules from the settings' ``policy`` section, ``mode`` and the interval (the
        look gap's default is the smaller of 10 minutes and half of it)."""
        gap = policy.min_look_gap_minutes
        return cls(
            failing_rounds=policy.failing_rounds,
            recovery_rounds=policy.recovery_rounds,
            ladder_days=tuple(policy.ladder_days),
            ladder_reset_days=policy.ladder_reset_days,
            model_wide_share=policy.model_wide_share,
            streak_max_age_hours=policy.streak_max_age_hours,
            min_look_gap_minutes=default_look_gap_minutes(interval_minutes) if gap is None else gap,
            mode=Mode(mode),
        )

    def as_dict(self) -> dict[str, JsonValue]:
        return {
            "failing_rounds": self.failing_rounds,
            "recovery_rounds": self.recovery_rounds,
            "ladder_days": list[JsonValue](self.ladder_days),
            "ladder_reset_days": self.ladder_reset_days,
            "model_wide_share": self.model_wide_share,
            "streak_max_age_hours": self.streak_max_age_hours,
            "min_look_gap_minutes": self.min_look_gap_minutes,
            "mode": str(self.mode),
        }


def _numbers_alike(value: Any) -> Any:
    """``10`` and ``10.0`` are one setting: a value read from a file or validated again must
    not change the version."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _numbers_alike(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_alike(v) for v in value]
    return value


def policy_version(rules: PolicyRules, extra: Mapping[str, Any] | None = None) -> str:
    """A short stable hash of the rules and ``extra`` (thresholds, probe checksums, floors...).

    ``"p-"`` + the first 10 hex digits of the SHA-256 of canonical JSON (sorted keys, no spaces).
    Values that JSON cannot hold are rendered with ``str``. The order of ``extra``'s keys does not
    matter; any change of a value does.
    """
    document = _numbers_alike(
        {"rules": rules.as_dict(), "revision": RULES_REVISION, "extra": dict(extra or {})}
    )
    canonical = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str
    )
    return "p-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:10]
