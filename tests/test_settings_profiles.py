"""``[[profiles]]`` (issue 36): read into frozen settings, one readable line per problem, and part
of the policy version only when there are any (the version of a config without profiles is
pinned in tests/test_settings_pins.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.config.probe_set import load_probes
from canary.config.settings import Settings, SettingsError, load_settings
from canary.core.policy import PolicyRules, policy_version
from canary.rounds.wiring import decision_settings

BASE = """
[[models]]
id = "acme/roleplay-1"
[[models]]
id = "acme/chat-2"
"""
CHAT = """
[[profiles]]
name = "chat"
models = ["acme/roleplay-1"]
needs = ["tools"]
max_ttft_p95_s = 8
min_context_length = 32768
max_price = { prompt = 1.0, completion = 3 }
min_quantization = "fp8"
unknown_quantization = "exclude"
max_error_rate = 0.05
"""


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "canary.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path, env={})


def version(settings: Settings) -> str:
    probes = load_probes(settings.probes_dir, settings.languages)
    rules = PolicyRules.of(settings.policy, settings.mode, settings.interval_minutes)
    return policy_version(rules, decision_settings(settings, probes))


def test_a_profile_is_read_into_the_core_rules(tmp_path: Path) -> None:
    [chat] = load(tmp_path, BASE + CHAT).profile_rules
    assert chat.name == "chat" and chat.models == ("acme/roleplay-1",)
    assert chat.needs == {"tools"} and chat.max_ttft_p95_s == 8.0
    assert (chat.max_price_prompt, chat.max_price_completion) == (1.0, 3.0)
    assert chat.min_quantization == "fp8" and chat.unknown_quantization == "exclude"
    assert chat.quantization_order[0] == "int4" and chat.settings_hash.startswith("s-")
    assert chat.covers("acme/roleplay-1") and not chat.covers("acme/chat-2")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[[profiles]]\nname = "Chat!"', "'profiles.0.name': 'Chat!' is not a profile name"),
        ('[[profiles]]\nname = "a"\nneeds = ["json"]', "'profiles.0.needs.0': should be one of"),
        ('[[profiles]]\nname = "a"\nmax_error_rate = 1.5', "'profiles.0.max_error_rate': should be at most 1, not 1.5"),
        ('[[profiles]]\nname = "a"\nmin_quantization = "fp5"', "'profiles.0.min_quantization': should be one of"),
        ('[[profiles]]\nname = "a"\nmax_ttft_p95_s = 0', "'profiles.0.max_ttft_p95_s': should be greater than 0"),
        ('[[profiles]]\nname = "a"\nmodels = ["x/y"]', "'profiles.0.models': x/y: not a watched model"),
        ('[[profiles]]\nname = "a"\n[[profiles]]\nname = "a"', "'profiles.1.name': 'a' names two profiles"),
        ('[[profiles]]\nname = "a"\nmax_p95 = 3', "'profiles.0.max_p95'"),
    ],
)  # fmt: skip
def test_a_bad_profile_is_one_line_naming_the_setting(tmp_path: Path, text: str, line: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load(tmp_path, BASE + text)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and line in message, message


def test_profiles_and_their_thresholds_take_part_in_the_policy_version(tmp_path: Path) -> None:
    without = version(load(tmp_path, BASE))
    with_chat = version(load(tmp_path, BASE + CHAT))
    tighter = version(
        load(tmp_path, BASE + CHAT.replace("max_ttft_p95_s = 8", "max_ttft_p95_s = 6"))
    )
    assert len({without, with_chat, tighter}) == 3
    assert version(load(tmp_path, BASE)) == without  # no profiles: the version as it was
    assert "profiles" not in decision_settings(
        load(tmp_path, BASE),
        load_probes(load(tmp_path, BASE).probes_dir, load(tmp_path, BASE).languages),
    )
