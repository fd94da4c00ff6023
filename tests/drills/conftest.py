"""Drills run real rounds: the in-process simulator, the real client, SQLite and lingua."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "bench"))  # the soak's fleets (soak_drill), reused here
