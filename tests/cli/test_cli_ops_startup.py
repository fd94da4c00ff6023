"""Read commands start fast: nothing heavy (HTTP stacks, the language detector, the web app) is
imported on their path. Checked in one fresh interpreter, where sys.modules tells the truth."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fleet import Fleet

from canary.store.repository import Store

HEAVY = [
    "lingua", "httpx", "uvicorn", "starlette", "apscheduler", "openai", "openrouter",
    "prometheus_client", "schemathesis",
    "canary.api",  # the CLI reads through canary.views, never the API
]  # fmt: skip
PROGRAM = """
import io, json, sys
from contextlib import redirect_stdout
from canary.cli.main import app
config, heavy, commands = sys.argv[1], set(json.loads(sys.argv[2])), json.loads(sys.argv[3])
report = {}
for command in commands:
    out = io.StringIO()
    with redirect_stdout(out):
        app(["--config", config, *command, "--json"], standalone_mode=False)
    json.loads(out.getvalue())
    loaded = {m.split(".")[0] for m in sys.modules} | (set(sys.modules) & heavy)
    report[" ".join(command)] = sorted(loaded & heavy)
print(json.dumps(report))
"""


@pytest.mark.slow
def test_read_commands_import_nothing_heavy(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'canary.db'}")
    store.upgrade()
    fleet = Fleet(store, tmp_path, "acme/startup")
    commands = [
        ["status"], ["quarantine", "list"], ["exclude", "list"], ["audit"],
        ["history", "--model", fleet.model, "--provider", "alpha"],
        ["ignore-list", "--model", fleet.model],
    ]  # fmt: skip
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROGRAM,
            str(fleet.config),
            json.dumps(HEAVY),
            json.dumps(commands),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    store.dispose()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {" ".join(c): [] for c in commands}
