"""The client-only distribution (client/pyproject.toml): its wheel asks for httpx alone, and
installed where only httpx and its own dependencies are, ``canary_client`` imports and fetches
the list without canary.

The wheel is built from the checkout (hatchling from the test extras, no download) and installed
with ``--no-deps --no-index`` into a fresh virtual environment. That environment then sees only
the distributions pip would bring for it: httpx and its dependencies, taken from the test
environment (each one's top-level files linked into a folder of their own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Builds a wheel and a virtual environment (seconds, several times that on a loaded machine).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
MODEL = "acme/roleplay-1"


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=100, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` bring, recursively (extras and foreign markers left
    out), as installed in the test environment."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name not in seen:
            seen.add(name)
            todo.extend(Requirement(r) for r in metadata.requires(name) or [])
    return seen


def link_only(names: set[str], folder: Path) -> None:
    """Make ``folder`` hold the top-level files (packages, modules, metadata) of ``names``."""
    folder.mkdir()
    for name in names:
        dist = metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if not f.parts[0].startswith("..")}:
            target = folder / top
            if not target.exists() and top != "__pycache__":
                target.symlink_to(Path(str(dist.locate_file(top))))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("client-dist")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist),
         str(REPO / "client"))  # fmt: skip
    (built,) = dist.glob("canary_client-*.whl")
    return built


def wheel_metadata(wheel: Path) -> Any:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(archive.read(name).decode())


def test_the_client_wheel_asks_for_httpx_alone_and_holds_only_the_helper(wheel: Path) -> None:
    assert wheel_metadata(wheel).get_all("Requires-Dist") == ["httpx>=0.27"]
    with zipfile.ZipFile(wheel) as archive:
        packages = {n.split("/")[0] for n in archive.namelist() if "dist-info" not in n}
    assert packages == {"canary_client"}
    brought = closure(["httpx>=0.27"])
    heavy = closure([str(r) for r in metadata.requires("canary") or []]) - brought
    assert {"sqlalchemy", "lingua-language-detector", "pydantic", "uvicorn"} <= heavy
    assert len(brought) <= 8, brought  # httpx, httpcore, h11, anyio, idna, certifi, ...


def test_the_installed_client_fetches_the_list_without_canary(
    wheel: Path, server: Any, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel))
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    allowed = closure(["httpx>=0.27"])
    link_only(allowed, tmp_path / "httpx-only")
    (Path(site) / "_httpx_only.pth").write_text(f"{tmp_path / 'httpx-only'}\n")
    program = (
        "import json, sys, importlib.util, canary_client\n"
        f"client = canary_client.IgnoreListClient({server.base_url!r}, {MODEL!r})\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names))\n"
        "print(json.dumps({'ignore': client.get(), 'file': canary_client.__file__,\n"
        "    'canary': importlib.util.find_spec('canary') is not None, 'loaded': loaded}))\n"
    )
    done = subprocess.run(
        [str(python), "-I", "-c", program], cwd=tmp_path, env={"PATH": os.defpath},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["ignore"] == ["bad-host"]
    assert Path(said["file"]).is_relative_to(venv)
    assert said["canary"] is False  # canary is not importable there
    tops = {p.name.removesuffix(".py") for p in (tmp_path / "httpx-only").iterdir()}
    assert set(said["loaded"]) - {"__main__"} <= tops | {"canary_client"}
