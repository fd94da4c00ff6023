"""The JSON the OpenRouter client sends and reads, as types.

What comes off the wire is untrusted: it is typed as pydantic's ``JsonValue``, and every field is checked
where it is read.
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic import JsonValue

JSONObject: TypeAlias = dict[str, JsonValue]


def as_object(value: JsonValue) -> JSONObject | None:
    return value if isinstance(value, dict) else None


def as_text(value: JsonValue) -> str:
    """The value when it is a string, else an empty string."""
    return value if isinstance(value, str) else ""


def as_int(value: JsonValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
