"""A plain install runs: the wheel carries the probe definitions and the migrations.

The test builds the wheel from the checkout (hatchling, from the test extras: no download),
installs it without its dependencies into a fresh virtual environment, and lets that
environment see the test environment's packages through a ``.pth`` line (a plain path entry:
the ``.pth`` files over there, the editable install's among them, are not run). Every command
then runs from a folder that is not the checkout, with neither ``CANARY_PROBES_DIR`` nor
``CANARY_MIGRATIONS_DIR`` set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from canary.store.migrate import head_revision

# Builds the wheel and a virtual environment, then runs canary from it (each command a fresh
# interpreter): seconds each, several times that on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "canary" / "sim" / "scenarios" / "example.yaml"


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path  # the working directory: neither the checkout nor inside it

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.home,
            env={"PATH": os.defpath, "HOME": str(self.home), **(env or {})},
            capture_output=True,
            text=True,
            timeout=100,
            check=False,
        )


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("install")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(root / "dist"),
         str(REPO))  # fmt: skip
    (wheel,) = (root / "dist").glob("canary-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    _pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index",
         str(wheel))  # fmt: skip
    target = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(target) / "_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    home = root / "elsewhere"
    home.mkdir()
    return Installed(venv, home)


def test_the_installed_package_is_the_one_that_runs_and_carries_its_data(
    installed: Installed,
) -> None:
    program = (
        "import json, canary, canary.config.bundled as b; "
        "print(json.dumps([canary.__file__, str(b.bundled_dir('probes')), "
        "str(b.bundled_dir('migrations'))]))"
    )
    done = installed.run("python", "-c", program)
    assert done.returncode == 0, done.stderr
    package, probes, migrations = map(Path, json.loads(done.stdout))
    assert package.is_relative_to(installed.venv) and not package.is_relative_to(REPO)
    assert probes == package.parent / "_bundled" / "probes"
    assert migrations == package.parent / "_bundled" / "migrations"
    assert sorted(p.name for p in (probes / "prompts").glob("*.yaml")) == sorted(
        p.name for p in (REPO / "probes" / "prompts").glob("*.yaml")
    )
    assert (probes / "builtin_exclusions.yaml").is_file()
    assert sorted(p.name for p in (migrations / "versions").glob("*.py")) == sorted(
        p.name for p in (REPO / "migrations" / "versions").glob("*.py")
    )


def test_a_drill_runs_from_the_installed_package(installed: Installed) -> None:
    scenario = installed.home / "scenario.yaml"
    shutil.copyfile(SCENARIO, scenario)
    done = installed.run("canary", "drill", "--scenario", scenario.name, "--rounds", "2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert {e["round"] for e in verdicts} == {1, 2}
    assert events[-1]["event"] == "summary" and events[-1]["rounds"] == 2


def test_db_upgrade_creates_a_fresh_store_at_head(installed: Installed) -> None:
    env = {"CANARY_DATABASE_URL": "sqlite:///fresh.db"}
    done = installed.run("canary", "db", "upgrade", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"sqlite:///fresh.db: at revision {head_revision()} (head)"
    assert (installed.home / "fresh.db").is_file()
    current = installed.run("canary", "db", "current", env=env)
    assert current.returncode == 0 and "(up to date)" in current.stdout, current.stderr


def test_the_overrides_still_win_and_a_wrong_one_is_one_line(installed: Installed) -> None:
    missing = str(installed.home / "nowhere")
    env = {"CANARY_DATABASE_URL": "sqlite:///override.db", "CANARY_MIGRATIONS_DIR": missing}
    done = installed.run("canary", "db", "upgrade", env=env)
    assert done.returncode == 1
    assert done.stderr == (
        f"canary: cannot upgrade sqlite:///override.db: MigrationsNotFound: "
        f"alembic migrations not found (tried {missing})\n"
    )
    scenario = installed.home / "scenario.yaml"
    shutil.copyfile(SCENARIO, scenario)
    drill = installed.run(
        "canary", "drill", "--scenario", scenario.name, "--rounds", "1",
        env={"CANARY_PROBES_DIR": missing},
    )  # fmt: skip
    assert drill.returncode == 1
    assert drill.stderr.startswith(f"canary: probe definitions: {missing}: ")
    assert drill.stderr.count("\n") == 1


def test_the_demo_runs_from_the_installed_package(installed: Installed) -> None:
    done = installed.run(
        "canary", "demo", "--exit", "--rounds", "1", "--pause", "0", "--port", "0",
        "--dir", "demo",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "done after 1 rounds" in done.stdout
    assert (installed.home / "demo" / "canary.db").is_file()


def test_the_app_side_helper_ships_with_canary(installed: Installed) -> None:
    program = (
        "import canary.client, canary_client; "
        "assert canary.client.IgnoreListClient is canary_client.IgnoreListClient; "
        "print(canary_client.__file__)"
    )
    done = installed.run("python", "-c", program)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed.venv)
