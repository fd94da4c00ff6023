"""Every app-side snippet of README.md and docs/apps.md runs as written: against the loopback
ignore-list server (``CANARY_URL``) and canary's OpenRouter simulator (``OPENROUTER_BASE_URL``),
whose three hosts the list cuts to one."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from canary.sim.server import RunningSimulator

REPO = Path(__file__).resolve().parents[2]
README, APPS = REPO / "README.md", REPO / "docs" / "apps.md"
SNIPPET = re.compile(r"<!-- snippet: (\S+) -->\n```(\w+)\n(.*?)```", re.DOTALL)
# The snippets each file carries; a new one needs a test below.
EXPECTED = {
    README: {"helper", "openai", "openrouter", "curl"},
    APPS: {"curl", "helper", "openrouter", "openai", "openai-wrapper", "async", "litellm"},
}
SDK_SNIPPETS = ["openai", "openrouter", "openai-wrapper", "async"]


def snippets(doc: Path) -> dict[str, str]:
    """The snippets of ``doc`` by name: the code block that follows each ``<!-- snippet: -->``."""
    found = SNIPPET.findall(doc.read_text())
    named = {name: code for name, _, code in found}
    assert len(named) == len(found), f"two snippets of one name in {doc.name}"
    return named


def run(doc: Path, name: str) -> None:
    code = snippets(doc)[name]
    exec(compile(code, f"{doc.name}:{name}", "exec"), {"__name__": "__main__"})  # noqa: S102


@pytest.fixture
def app_env(
    server: Any, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """What the snippets read from the environment, and a working directory of their own."""
    server.behaviour.ignore = ["alpha", "bravo"]
    monkeypatch.setenv("CANARY_URL", server.base_url)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test")
    monkeypatch.setenv("OPENROUTER_BASE_URL", sim.base_url)
    monkeypatch.chdir(tmp_path)
    return server


def served(sim: RunningSimulator) -> list[str]:
    return [r["provider"] for r in sim.state.requests()]


@pytest.mark.parametrize("doc", [README, APPS], ids=lambda d: d.name)
def test_each_file_carries_the_snippets_tested_here(doc: Path) -> None:
    assert set(snippets(doc)) == EXPECTED[doc]


@pytest.mark.parametrize("doc", [README, APPS], ids=lambda d: d.name)
def test_the_helper_snippet_prints_the_provider_object(
    doc: Path, app_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run(doc, "helper")
    assert "{'ignore': ['alpha', 'bravo']}" in capsys.readouterr().out
    assert Path("ignore.json").is_file()  # the cache_path it names, in the app's directory


@pytest.mark.parametrize(
    ("doc", "name"),
    [(README, n) for n in SDK_SNIPPETS if n in EXPECTED[README]]
    + [(APPS, n) for n in SDK_SNIPPETS],
    ids=lambda x: x.name if isinstance(x, Path) else x,
)
def test_an_sdk_snippet_sends_its_request_with_the_list(
    doc: Path, name: str, app_env: Any, sim: RunningSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    run(doc, name)
    assert capsys.readouterr().out.strip()  # the answer's text
    assert served(sim) == ["charlie"]  # the one host the list leaves


@pytest.mark.slow  # starts bash and curl
@pytest.mark.parametrize("doc", [README, APPS], ids=lambda d: d.name)
def test_the_curl_snippet_runs_in_a_shell(doc: Path, app_env: Any, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", snippets(doc)["curl"]],
        cwd=tmp_path, env={**os.environ}, capture_output=True, text=True, timeout=20, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"ignore": ["alpha", "bravo"]' in done.stdout
    if doc == APPS:  # its second request revalidates with the ETag
        assert done.stdout.splitlines()[-1] == "304"


@pytest.mark.slow  # importing litellm takes seconds (several times that on a loaded machine)
@pytest.mark.timeout(120)
def test_the_litellm_snippet_sends_its_call_with_the_list(
    app_env: Any, sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of its price list
    import litellm

    monkeypatch.setattr(litellm, "callbacks", [])  # the snippet appends its callback
    run(APPS, "litellm")
    assert capsys.readouterr().out.strip()
    assert served(sim) == ["charlie"]


@pytest.mark.slow  # starts bash and curl
def test_the_curl_snippet_revalidates_against_canarys_own_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_ignore_client_live import Live

    live = Live(tmp_path)
    try:
        monkeypatch.setenv("CANARY_URL", live.base_url)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", snippets(APPS)["curl"]],
            cwd=tmp_path, env={**os.environ}, capture_output=True, text=True, timeout=20,
            check=False,
        )  # fmt: skip
    finally:
        live.stop()
    assert done.returncode == 0, done.stderr
    assert '"ignore":["bad-host"]' in done.stdout.replace(" ", "")
    assert done.stdout.splitlines()[-1] == "304"
