"""Tags are lowercase slugs, refused at input: the positive controls of the settings and the
providers of the reviewed built-in list (issue 12, identity). A tag OpenRouter would not match
(``DeepInfra``) would silently name nothing: the floor, the list and the controls would all
miss it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from canary.config.definitions import ProbeDefinitionError, load_builtin_exclusions
from canary.config.settings import SettingsError, load_settings

REPO = Path(__file__).resolve().parents[2]
UPPER = ["FilterHost", "deepinfra/FP8", "DEEPINFRA"]


@pytest.mark.parametrize("tag", UPPER)
def test_an_upper_case_positive_control_is_refused_by_the_settings(
    tmp_path: Path, tag: str
) -> None:
    config = tmp_path / "canary.toml"
    config.write_text(f'[[models]]\nid = "acme/chat-1"\npositive_controls = ["{tag}"]\n')
    with pytest.raises(SettingsError) as caught:
        load_settings(config, env={})
    message = str(caught.value)
    assert "positive_controls" in message and "lowercase" in message and tag in message


def test_a_lowercase_positive_control_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "canary.toml"
    config.write_text('[[models]]\nid = "acme/chat-1"\npositive_controls = ["deepinfra/fp8"]\n')
    assert load_settings(config, env={}).models[0].positive_controls == ("deepinfra/fp8",)


@pytest.mark.parametrize("tag", UPPER)
def test_an_upper_case_provider_in_the_builtin_list_is_refused(tmp_path: Path, tag: str) -> None:
    probes = tmp_path / "probes"
    shutil.copytree(REPO / "probes", probes)
    entry = {
        "model": "acme/chat-1", "provider": tag, "reason": "measured", "evidence": "a drill",
        "since": "2026-01-01",
    }  # fmt: skip
    (probes / "builtin_exclusions.yaml").write_text(yaml.safe_dump({"entries": [entry]}))
    with pytest.raises(ProbeDefinitionError) as caught:
        load_builtin_exclusions(probes)
    message = str(caught.value)
    assert "builtin_exclusions.yaml" in message and "'entries.0.provider'" in message


def test_the_repository_builtin_list_loads() -> None:
    for entry in load_builtin_exclusions(REPO / "probes"):
        assert entry.tag == entry.tag.lower()
