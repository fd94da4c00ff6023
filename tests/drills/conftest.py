"""Drills run real rounds: the in-process simulator, the real client, SQLite and lingua."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
