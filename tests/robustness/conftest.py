"""The robustness tests reuse tests/openrouter's wire server and tests/notify's receiver."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "openrouter", HERE.parent / "notify"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
