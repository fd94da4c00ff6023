"""The JSON the OpenRouter client sends and reads, as types.

What comes off the wire is untrusted: it is typed as :data:`JSONValue`, and every field is checked
where it is read.
"""

from __future__ import annotations

from typing import TypeAlias

JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"
JSONObject: TypeAlias = "dict[str, JSONValue]"


def as_object(value: JSONValue) -> JSONObject | None:
    return value if isinstance(value, dict) else None


def as_text(value: JSONValue) -> str:
    """The value when it is a string, else an empty string."""
    return value if isinstance(value, str) else ""


def as_int(value: JSONValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
