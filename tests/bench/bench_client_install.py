"""What installing the app-side helper brings: the distributions (and their installed size) of
``canary-client`` (client/pyproject.toml) against those of ``canary``, read from the metadata of
the test environment (no download). Extras and markers that do not apply are left out.

    .venv/bin/python tests/bench/bench_client_install.py
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def closure(requirements: list[str]) -> set[str]:
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


def installed_bytes(names: set[str]) -> int:
    total = 0
    for name in names:
        for file in metadata.distribution(name).files or []:
            path = Path(str(file.locate()))
            total += path.stat().st_size if path.is_file() else 0
    return total


def main() -> None:
    for project in (REPO / "client", REPO):
        declared = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        names = closure(declared["dependencies"])
        print(
            f"{declared['name']}: {len(names) + 1} distributions with itself "
            f"({', '.join(sorted(names)) if len(names) < 10 else 'its dependencies'}), "
            f"{installed_bytes(names) / 1e6:.1f} MB installed besides itself"
        )


if __name__ == "__main__":
    main()
