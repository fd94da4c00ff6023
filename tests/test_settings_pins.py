"""The policy version and the built-in list's checksum change only when a setting does.

The values below were taken before the settings moved from one validation library to another:
reading the same settings through other code must give the same version, or every replica of a
fleet would record decisions under a new policy that no one changed. A change of ``probes/`` or
of ``RULES_REVISION`` changes them on purpose: pin the new values then, and only then.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.config.probe_set import load_probes
from canary.config.settings import Settings, load_settings
from canary.core.policy import RULES_REVISION, PolicyRules, policy_version
from canary.rounds.wiring import decision_settings

# Several settings away from their defaults, in every table the version reads.
CHANGED = """
mode = "enforce"
interval_minutes = 20
ttft_threshold_s = 8
ttft_samples = 5
languages = ["en", "pt", "ja"]
daily_budget_usd = 12.5
concurrency = 64
[openrouter]
first_token_timeout_s = 25
stream_timeout_s = 90
max_tokens = 300
[policy]
failing_rounds = 3
recovery_rounds = 4
ladder_days = [0.5, 2, 10]
ladder_reset_days = 21
model_wide_share = 0.6
streak_max_age_hours = 4
min_look_gap_minutes = 7.5
[[models]]
id = "acme/roleplay-1"
positive_controls = ["some-filtering-host", "other/fp8"]
capacity_floor = 3
max_price = { prompt = 1.0, completion = 3 }
min_quantization = "fp8"
[[models]]
id = "acme/chat-2"
publish_controls = false
positive_controls = ["ctl"]
capacity_floor = 0
"""
# The shipped list holds no entry: the checksum of {"entries": []}.
BUILTIN_CHECKSUM = "d801aa1fb7ddcc330a5e3173372ea6af4a3d08ec58074478e85aa5603e926658"


def _version_and_builtin(settings: Settings) -> tuple[str, str]:
    probes = load_probes(settings.probes_dir, settings.languages)
    rules = PolicyRules.of(settings.policy, settings.mode, settings.interval_minutes)
    version = policy_version(rules, decision_settings(settings, probes))
    return version, probes.checksums["builtin_exclusions"]


@pytest.fixture(autouse=True)
def _no_settings_file_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (None, {}, "p-688388459c"),
        (CHANGED, {}, "p-a1b89d7e2d"),
        (CHANGED, {"CANARY_MODELS": "acme/chat-2,b/three", "CANARY_LANGUAGES": "de,en"},
         "p-e9022317f1"),
    ],
)  # fmt: skip
def test_the_same_settings_keep_their_policy_version(
    tmp_path: Path, text: str | None, env: dict[str, str], expected: str
) -> None:
    assert RULES_REVISION == 9, "the rules changed: pin the versions they give"
    path = None
    if text is not None:
        path = tmp_path / "pinned.toml"
        path.write_text(text, encoding="utf-8")
    assert _version_and_builtin(load_settings(path, env=env)) == (expected, BUILTIN_CHECKSUM)
