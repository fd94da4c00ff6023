"""pydantic's ValidationError as readable lines, one per problem, each naming its field.

Settings, probe definitions and simulator scenarios are read by pydantic; this is the one place
that says their problems in the words README uses (``setting 'retention_days': should be at
least 7, not 6``). A value is shown only where it cannot be a secret: a text that is not the
expected type is never shown (a key in the wrong place), nor the value of an unknown key.
"""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

Loc = tuple[str | int, ...]

# What a value should have been, by the type of pydantic's error (the value is shown after it).
_SHOULD_BE = {
    "int": "an integer",
    "float": "a finite number",
    "finite": "a finite number",
    "bool": "true or false",
    "list": "a list",
    "tuple": "a list",
    "model": "a table of keys and values",
    "dict": "a table of keys and values",
    "date": "a date (YYYY-MM-DD)",
    "path": "a path",
}
_BOUNDS = {
    "greater_than_equal": ("should be at least", "ge"),
    "greater_than": ("should be greater than", "gt"),
    "less_than_equal": ("should be at most", "le"),
    "less_than": ("should be less than", "lt"),
}


def rule_broken(field: str, message: str) -> PydanticCustomError:
    """An error of a rule across fields that names the field to change (``policy.x``)."""
    return PydanticCustomError("rule", message.replace("{", "{{").replace("}", "}}"),
                               {"field": field})  # fmt: skip


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _message(error: ErrorDetails) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error["input"]
    if kind == "literal_error":
        return f"should be one of {ctx['expected'].replace(' or ', ', ')}, not {_shown(value)}"
    if kind in _BOUNDS:
        words, key = _BOUNDS[kind]
        return f"{words} {_number(ctx[key])}, not {_number(value)}"
    if kind == "union_tag_invalid":  # a tagged choice (a fault's kind) names no choice
        return f"unknown {ctx['discriminator'].strip(chr(39))} {ctx['tag']!r}"
    if kind == "union_tag_not_found":
        return f"{ctx['discriminator']} is required"
    if kind == "too_short":
        return f"should have at least {ctx['min_length']} item(s)"
    family = kind.split("_")[0]
    if family in _SHOULD_BE:
        return f"should be {_SHOULD_BE[family]}, not {_shown(value)}"
    if kind == "string_type":
        return "should be text"  # the value is not shown: it may be a secret in the wrong place
    if kind in ("value_error", "rule"):  # our own validators' words
        return error["msg"].removeprefix("Value error, ")
    return error["msg"][:1].lower() + error["msg"][1:]  # "String should match pattern ..."


def problems(error: ValidationError, noun: str) -> list[tuple[Loc, str]]:
    """Each problem as ``(where, line)``: ``unknown <noun> 'a.b'``, ``<noun> 'a.b' is
    required`` or ``<noun> 'a.b': <what is wrong>`` (a rule of a whole file: its message)."""
    found: list[tuple[Loc, str]] = []
    for e in error.errors(include_url=False):
        loc: Loc = tuple(e["loc"])
        if e["type"] == "rule":
            loc = tuple(str((e.get("ctx") or {})["field"]).split("."))
        where = ".".join(str(part) for part in loc)
        if e["type"] == "extra_forbidden":
            line = f"unknown {noun} {where!r}"
        elif e["type"] == "missing":
            line = f"{noun} {where!r} is required"
        elif not loc:
            line = _message(e)
        else:
            line = f"{noun} {where!r}: {_message(e)}"
        found.append((loc, line))
    return found
