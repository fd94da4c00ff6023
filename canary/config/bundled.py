"""Where the data that ships with canary lies: the probe definitions and the Alembic migrations.

A checkout (and an editable install of it) keeps them at the repository root, ``probes/`` and
``migrations/``; a wheel or a plain ``pip install .`` carries them inside the package, as
``canary/_bundled/probes`` and ``canary/_bundled/migrations`` (hatchling's ``force-include`` in
pyproject.toml). ``CANARY_PROBES_DIR`` and ``CANARY_MIGRATIONS_DIR`` still override both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

PACKAGE = Path(__file__).resolve().parents[1]
BUNDLED = PACKAGE / "_bundled"


def bundled_dir(name: Literal["probes", "migrations"]) -> Path:
    """The installed copy when the package carries one, else the checkout's."""
    inside = BUNDLED / name
    return inside if inside.is_dir() else PACKAGE.parent / name
