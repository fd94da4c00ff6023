"""The command line as a user meets it: version, help, completion, read-only opening, readable
output (times to the second, lists as JSON), and `canary round` in a slot that already ran."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_fleet import Fleet
from cli_runner import CliRunner, command_tree
from sqlite_template import migrated_sqlite

from canary import __version__
from canary.cli.main import app
from canary.core.plan import slot_of
from canary.store.repository import Store

CANARY = Path(sys.executable).parent / "canary"
runner = CliRunner()
FRACTION = re.compile(r"\d\d:\d\d:\d\d\.\d+")


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def _command_paths() -> list[list[str]]:
    root = command_tree(app)
    paths: list[list[str]] = [[]]
    for name, command in getattr(root, "commands", {}).items():
        paths.append([name])
        paths.extend([name, sub] for sub in getattr(command, "commands", {}))
    return paths


def test_version_prints_the_package_version() -> None:
    result = run("--version")
    assert result.exit_code == 0 and result.stdout == f"canary {__version__}\n"


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "canary")
def test_help_answers_to_h_and_names_values_as_words(path: list[str]) -> None:
    """Every option that takes a value names it as a word (MODEL, N, FILE), not as a Python
    type (``<str>``, ``<list[str]>``)."""
    short, long = run(*path, "-h"), run(*path, "--help")
    assert short.exit_code == 0 and short.stdout == long.stdout
    found = command_tree(app)
    for name in path:
        found = found.commands[name]
    for param in found.params:
        if param.param_type_name == "option" and not getattr(param, "is_flag", False):
            assert param.metavar and param.metavar.isupper(), (path, param.opts)
            assert f" {param.metavar} " in short.stdout, (path, param.opts)
    for python_type in ("<str>", "<list[", "<float>", "<path>"):
        assert python_type not in short.stdout, (path, python_type)


def test_option_values_are_named_in_help() -> None:
    probe = run("probe", "-h").stdout
    assert re.search(r"--provider\s+-p\s+PROVIDER", probe)
    assert re.search(r"--config\s+FILE", run("-h").stdout)


def _options_of(path: list[str]) -> list[list[str]]:
    found = command_tree(app)
    for name in path:
        found = found.commands[name]
    return [list(p.opts) for p in found.params if p.param_type_name == "option"]


SHORT_OF = {"--model": "-m", "--provider": "-p"}


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "canary")
def test_model_and_provider_options_take_the_same_short_names_everywhere(
    path: list[str],
) -> None:
    for opts in _options_of(path):
        for long, short in SHORT_OF.items():
            if long in opts:
                assert short in opts, (path, opts)
            elif short in opts:
                raise AssertionError(f"{short} names {opts} in {path}, not {long}")


def test_probe_takes_m_and_p_like_the_other_commands() -> None:
    assert ["--model", "-m"] in _options_of(["probe"])
    assert ["--provider", "-p"] in _options_of(["probe"])


@pytest.mark.slow
def test_shell_completion_is_offered() -> None:
    assert "--install-completion" in run("-h").stdout
    # typer detects the shell from the process tree (absent under a supervisor); its own test
    # switch makes --show-completion take the shell's name instead
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        [str(CANARY), "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert shown.returncode == 0
    assert "_CANARY_COMPLETE=complete_bash" in shown.stdout


def canary(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process, with no setting from the test's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CANARY_", "OPENROUTER_"))}
    return subprocess.run(
        [str(CANARY), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
def test_the_installed_command_prints_its_version(tmp_path: Path) -> None:
    done = canary(["--version"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"canary {__version__}\n", "")


@pytest.mark.slow
def test_the_installed_command_answers_to_h(tmp_path: Path) -> None:
    short, long = canary(["-h"], tmp_path), canary(["--help"], tmp_path)
    assert short.returncode == 0 and short.stderr == ""
    assert short.stdout == long.stdout
    assert "Usage: canary [OPTIONS] COMMAND [ARGS]..." in short.stdout
    for command in ("round", "serve", "status", "probe", "history"):
        assert re.search(rf"^│ {command}\s", short.stdout, re.MULTILINE), command


@pytest.mark.slow
def test_the_installed_command_reads_an_empty_folder_without_creating_a_database(
    tmp_path: Path,
) -> None:
    done = canary(["status"], tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("canary: no database at canary.db (sqlite:///canary.db): ")
    assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


READ_ONLY = [
    ["status"],
    ["quarantine", "list"],
    ["quarantine", "show", "-m", "acme/x-1", "-p", "a"],
    ["exclude", "list"],
    ["ignore-list", "-m", "acme/x-1"],
    ["history", "-m", "acme/x-1", "-p", "a"],
    ["audit"],
    ["drift", "-m", "acme/x-1"],
    ["db", "current"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_read_only_commands_never_create_a_database(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ("CANARY_DATABASE_URL", "CANARY_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr.startswith("canary: no database at canary.db (sqlite:///canary.db): ")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_tables_show_times_to_the_second(fleet: Fleet) -> None:
    config = ("--config", str(fleet.config))
    for args in (
        ("quarantine", "list"),
        ("quarantine", "show", "-m", fleet.model, "-p", "bravo"),
        ("exclude", "list"),
        ("history", "-m", fleet.model, "-p", "bravo"),
        ("audit",),
        ("status", "-m", fleet.model),
    ):
        result = run(*config, *args)
        assert result.exit_code == 0, result.output
        assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", result.stdout), args
        assert not FRACTION.search(result.stdout), (args, result.stdout)
    # JSON keeps the documents' own precision (the API's format)
    assert FRACTION.search(run(*config, "quarantine", "list", "--json").stdout)


def test_status_table_gives_every_time_in_seconds(fleet: Fleet) -> None:
    text = run("--config", str(fleet.config), "status", "-m", fleet.model).stdout
    assert "OR p50 0.64" in text  # OpenRouter's advertised 640 ms, in seconds like the rest
    assert not re.search(r"\d\s*ms\b", text), text


def test_ignore_list_table_prints_the_list_as_json(fleet: Fleet) -> None:
    result = run("--config", str(fleet.config), "ignore-list", "-m", fleet.model)
    line = next(x for x in result.stdout.splitlines() if x.startswith("provider: "))
    assert json.loads(line.removeprefix("provider: ")) == {"ignore": ["bravo", "delta", "echo"]}
    status = run("--config", str(fleet.config), "status", "-m", fleet.model).stdout
    assert 'ignore list: ["bravo", "delta", "echo"]' in status


def test_round_in_a_slot_that_already_ran_says_when_and_by_whom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = migrated_sqlite(tmp_path / "canary.db")
    model = "acme/ran-1"
    with Store(url) as store:
        slot = slot_of(datetime.now(UTC), 30)
        started = slot.replace(second=4, microsecond=123456)
        rid = store.claim_round(model, slot, "other-host:41", "p", {}, started_at=started)
        assert rid is not None
        store.finish_round(rid, "finished", at=started.replace(second=9))
    monkeypatch.setenv("CANARY_DATABASE_URL", url)
    monkeypatch.setenv("CANARY_MODELS", model)
    monkeypatch.setenv("CANARY_OPENROUTER_BASE_URL", "http://127.0.0.1:9/api/v1")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-surface")
    result = runner.invoke(app, ["round"])
    assert result.exit_code == 0, result.output
    stamp = slot.strftime("%Y-%m-%dT%H:%M")
    assert result.stdout == (
        f"{model}: this slot ({stamp}:00Z) already ran: round {rid}, started {stamp}:04Z by "
        f"other-host:41, finished at {stamp}:09Z; the next round runs at the next slot\n"
    )
