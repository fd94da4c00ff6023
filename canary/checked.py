"""Frozen records whose fields are checked, and converted, when they are built.

The settings and the built-in exclusion list are read by every command, ``canary status``
included. They used to be pydantic models: importing pydantic and building those models took
about 0.12 s of each command's start-up. What they need is small, so it is written here:

- a field's annotation says what it takes: ``int``, ``float``, ``str``, ``bool``, ``Path``,
  ``date``, :class:`Secret`, a ``Literal``, ``X | None``, ``tuple[X, ...]`` or another record;
  ``Annotated[X, Bound(...)]`` or ``Annotated[X, Check(f)]`` adds a rule;
- text is turned into numbers (settings from the environment are text), lists into tuples,
  mappings into records (:meth:`Record.of` refuses unknown keys);
- :meth:`Record.check` holds a record's rules across fields.

Every problem raises :class:`FieldError`, which says where (``loc``) and what, in one line.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, get_args, get_origin

Loc = tuple[str | int, ...]


class FieldError(ValueError):
    """A value that does not fit; ``loc`` is where it is (``("models", 0, "id")``, or ``()`` for a
    rule across a whole record), ``kind`` is ``"unknown"``, ``"missing"`` or ``"value"``."""

    def __init__(self, loc: Loc, message: str, kind: str = "value") -> None:
        super().__init__(message)
        self.loc, self.message, self.kind = loc, message, kind

    def within(self, *outer: str | int) -> FieldError:
        return FieldError((*outer, *self.loc), self.message, self.kind)

    @property
    def where(self) -> str:
        return ".".join(str(part) for part in self.loc)

    def __str__(self) -> str:
        if self.kind == "unknown":
            return f"unknown key {self.where!r}"
        if self.kind == "missing":
            return f"missing key {self.where!r}"
        return f"{self.where}: {self.message}" if self.loc else self.message


class Secret:
    """Text that is never shown: ``repr`` and ``str`` give stars; read it with
    :meth:`get_secret_value` where it is used."""

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({str(self)!r})"

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclasses.dataclass(frozen=True)
class Bound:
    """Limits for a number (``ge``, ``gt``, ``le``) or a text (``min_length``, ``pattern``)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    min_length: int | None = None
    pattern: str | None = None

    def problem(self, value: Any) -> str | None:
        if self.ge is not None and value < self.ge:
            return f"should be at least {self.ge:g}, not {value!r}"
        if self.gt is not None and value <= self.gt:
            return f"should be greater than {self.gt:g}, not {value!r}"
        if self.le is not None and value > self.le:
            return f"should be at most {self.le:g}, not {value!r}"
        if self.min_length is not None and len(value) < self.min_length:
            return f"should have at least {self.min_length} character(s)"
        if self.pattern is not None and re.search(self.pattern, value) is None:
            return f"{value!r} does not match {self.pattern!r}"
        return None


@dataclasses.dataclass(frozen=True)
class Check:
    """A field's own rule: ``rule(value)`` returns the value to keep or raises ValueError."""

    rule: Callable[[Any], Any]


_NAMES = {
    int: "an integer",
    float: "a finite number",
    str: "text",
    bool: "true or false",
    Path: "a path",
    date: "a date (YYYY-MM-DD)",
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _scalar(kind: type, value: Any) -> Any:
    """``value`` as a ``kind``; ValueError when it is not one (bool is never a number here)."""
    if kind is float:
        number = value.strip() if isinstance(value, str) else value
        if isinstance(number, (int, float, str)) and not isinstance(number, bool):
            converted = float(number)
            if math.isfinite(converted):
                return converted
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            return int(value.strip())
    elif kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
            return value.strip().lower() in ("true", "1")
    elif kind is str:
        if isinstance(value, str):
            return value
    elif kind is Path:
        if isinstance(value, (str, Path)):
            return Path(value)
    elif kind is date:
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
        if isinstance(value, str):
            return date.fromisoformat(value.strip())
    raise ValueError


def convert(annotation: Any, value: Any) -> Any:
    """``value`` converted to ``annotation``; FieldError (``loc`` inside the value) otherwise."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *rules = get_args(annotation)
        value = convert(inner, value)
        for rule in rules:
            if isinstance(rule, Bound) and (problem := rule.problem(value)) is not None:
                raise FieldError((), problem)
            if isinstance(rule, Check):
                try:
                    value = rule.rule(value)
                except ValueError as exc:
                    raise FieldError((), str(exc)) from None
        return value
    if origin is types.UnionType or origin is typing.Union:
        options = [a for a in get_args(annotation) if a is not type(None)]
        if value is None:
            return None
        (option,) = options  # only ``X | None`` is used
        return convert(option, value)
    if origin is Literal:
        choices = get_args(annotation)
        if value in choices:
            return value
        allowed = ", ".join(repr(c) for c in choices)
        raise FieldError((), f"should be one of {allowed}, not {_shown(value)}")
    if origin is tuple:
        item_type, _ = get_args(annotation)
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
            raise FieldError((), f"should be a list, not {_shown(value)}")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(convert(item_type, item))
            except FieldError as exc:
                raise exc.within(index) from None
        return tuple(items)
    if isinstance(annotation, type) and issubclass(annotation, Record):
        if isinstance(value, annotation):
            return value
        if isinstance(value, Mapping):
            return annotation.of(value)
        raise FieldError((), f"should be a table of keys and values, not {_shown(value)}")
    if annotation is Secret:
        if isinstance(value, Secret):
            return value
        if isinstance(value, str):
            return Secret(value)
        raise FieldError((), "should be text")  # never shows the value: it is a secret
    try:
        return _scalar(annotation, value)
    except (ValueError, OverflowError):  # OverflowError: an integer too large for a float
        raise FieldError((), f"should be {_NAMES.get(annotation, annotation.__name__)}, not "
                         f"{_shown(value)}") from None  # fmt: skip


_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}


def _annotations(cls: type) -> tuple[tuple[str, Any], ...]:
    """A record class's fields and their resolved annotations (resolved once per class)."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        found = _FIELDS[cls] = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
    return found


class Record:
    """Base of a frozen dataclass whose fields are converted and checked on construction.

    Subclasses are declared with ``@dataclasses.dataclass(frozen=True, kw_only=True)``.
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __post_init__(self) -> None:
        for name, annotation in _annotations(type(self)):
            value = getattr(self, name)
            try:
                converted = convert(annotation, value)
            except FieldError as exc:
                raise exc.within(name) from None
            if converted is not value:
                object.__setattr__(self, name, converted)
        try:
            self.check()
        except FieldError:
            raise
        except ValueError as exc:
            raise FieldError((), str(exc)) from None

    def check(self) -> None:
        """Rules across fields: raise ValueError (or FieldError naming the field)."""

    @classmethod
    def prepare(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """The mapping before it is read (a secret read from its file, say)."""
        return data

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Self:
        """A record from a mapping (a TOML table, a YAML mapping); unknown keys are refused."""
        try:
            data = cls.prepare(data)
        except ValueError as exc:
            raise FieldError((), str(exc)) from None
        fields = dataclasses.fields(cls)
        names = {f.name for f in fields}
        for key in data:
            if key not in names:
                raise FieldError((str(key),), "unknown", kind="unknown")
        for f in fields:
            if (
                f.name not in data
                and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING
            ):
                raise FieldError((f.name,), "missing", kind="missing")
        return cls(**data)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, checked again (rules across fields included)."""
        return dataclasses.replace(self, **changes)


def plain(value: Any) -> Any:
    """``value`` as JSON would hold it: records as dicts, tuples as lists, paths and dates as
    text, a secret as stars."""
    if isinstance(value, Record):
        return {name: plain(getattr(value, name)) for name, _ in _annotations(type(value))}
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, (Path, Secret)):
        return str(value)
    if isinstance(value, date):
        return value.isoformat()
    return value
