"""Obvious encoding corruption: U+FFFD, C1 controls, and UTF-8 read as cp1252 or latin-1.

Pure string checks, no detector needed. Each returns a short evidence string or ``None``.
"""

from __future__ import annotations

import re

_REPLACEMENT = "\ufffd"
_C1 = re.compile("[\u0080-\u009f]")
# UTF-8 bytes decoded as cp1252 or latin-1 ("é" -> "Ã©", "’" -> "â€™", "ą" -> "Ä…").
# Each alternative needs a lead character that is never followed by that character in real text.
_CP1252_CONTINUATION = (
    "\u0080-\u00bf\u20ac\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152"
    "\u017d\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u017e\u0178"
)
_MOJIBAKE = re.compile(
    "|".join(
        (
            "[\u00c3\u00c2][\u00a1-\u00bf]",  # Ã© Ã£ Ã¡ Â°
            "\u00c3[\u00a0\u20ac\u2030\u2021\u2020\u2039\u203a\u0152\u0153\u2122\u0160"
            "\u0161\u017d\u017e\u0178\u0192\u02c6\u02dc]",  # Ã  (à) ÃŸ (ß)
            f"[\u00c4\u00c5][{_CP1252_CONTINUATION}](?=\\w)",  # Ä… Å‚ inside a word
            # ... or ending one: a capital lead right after a lowercase letter (byÅ‚, eÌ€)
            f"(?<=[a-z\u00df-\u00ff])[\u00c2-\u00c5\u00cc][{_CP1252_CONTINUATION}]",
            f"\u00e2\u20ac[{_CP1252_CONTINUATION}]?",  # â€™ â€œ â€" â€¦
            "\u00e2\u201a\u00ac",  # â‚¬ (€)
            "\u00ef\u00bb\u00bf",  # a UTF-8 byte order mark read as cp1252
        )
    )
)


def encoding_corruption(text: str) -> str | None:
    """Evidence of broken encoding in ``text`` ("U+FFFD x2", "mojibake 'Ã©'"), or ``None``."""
    found: list[str] = []
    replacements = text.count(_REPLACEMENT)
    if replacements:
        found.append(f"U+FFFD x{replacements}")
    mojibake = _MOJIBAKE.search(text)
    if mojibake:
        found.append(f"mojibake {_visible(mojibake.group(0))!r}")
    control = _C1.search(text)
    if control and not mojibake:
        count = len(_C1.findall(text))
        found.append(f"C1 control U+{ord(control.group(0)):04X} x{count}")
    return ", ".join(found) if found else None


def _visible(fragment: str) -> str:
    return "".join(f"U+{ord(ch):04X}" if 0x80 <= ord(ch) <= 0x9F else ch for ch in fragment)
