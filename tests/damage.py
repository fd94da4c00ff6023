"""Encoding damage made on purpose, the two kinds web text really carries.

The shared corpus was repaired (its README, "Repairs made here"), so tests that need damaged
text make it from clean lines instead of borrowing it from there.
"""

from __future__ import annotations


def cp1252_residue(text: str) -> str:
    """cp1252 bytes read as Latin-1: typographic marks become C1 controls (’ -> U+0092)."""
    return text.encode("cp1252").decode("latin-1")


def double_encoded(text: str) -> str:
    """UTF-8 bytes read as cp1252 (ą -> Ä…, ä -> Ã¤); a byte cp1252 lacks keeps its Latin-1 char."""
    raw = text.encode("utf-8")
    return "".join(
        raw[i : i + 1].decode("cp1252", errors="ignore") or chr(raw[i]) for i in range(len(raw))
    )
