"""Reading the definition files under ``probes/``, and the reviewed built-in exclusion list.

Light on purpose (pydantic and PyYAML only): operator commands read the built-in list through
:func:`load_builtin_exclusions` without loading every probe definition, and the full load
(:func:`canary.probes.load_probes`) reads it through the same function.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from canary.core.identity import TAG_PATTERN
from canary.core.model import Exclusion, Layer

BUILTIN_FILE = "builtin_exclusions.yaml"
_M = TypeVar("_M", bound=BaseModel)


class ProbeDefinitionError(ValueError):
    """A probe definition file is missing or invalid; the message names the file and the field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"unknown key {where!r}"
    if first["type"] == "missing":
        return f"missing key {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    return f"field {where!r}: {message}" if where else message


def read_definition(directory: Path, relative: str) -> Any:
    """A definition file's content (JSON or YAML, a mapping); ProbeDefinitionError otherwise."""
    path = directory / relative
    name = f"{directory.name}/{relative}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProbeDefinitionError(f"{name}: missing probe definition file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProbeDefinitionError(f"{name}: cannot be read: {exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ProbeDefinitionError(
            f"{name}: not valid JSON: {exc.msg} at line {exc.lineno}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ProbeDefinitionError(f"{name}: not valid YAML: {problem}{where}") from None
    if not isinstance(data, dict):
        raise ProbeDefinitionError(f"{name}: expected a mapping at the top level")
    return data


def parse_definition(directory: Path, relative: str, model: type[_M]) -> _M:
    try:
        return model.model_validate(read_definition(directory, relative))
    except ValidationError as exc:
        raise ProbeDefinitionError(f"{directory.name}/{relative}: {_describe(exc)}") from None


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)


class BuiltinEntry(Strict):
    model: str = Field(pattern=r"^[^/\s]+/[^/\s]+$")
    provider: str = Field(pattern=TAG_PATTERN)  # a full tag, or a base slug: every endpoint
    reason: str = Field(min_length=1)
    since: date
    until: date | None = None
    evidence: str = Field(min_length=1)
    rounds: tuple[int, ...] = ()


class BuiltinExclusions(Strict):
    entries: tuple[BuiltinEntry, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> BuiltinExclusions:
        seen: set[tuple[str, str]] = set()
        for e in self.entries:
            if (e.model, e.provider) in seen:
                raise ValueError(f"duplicate entry for {e.model} / {e.provider}")
            seen.add((e.model, e.provider))
        return self

    def exclusions(self) -> tuple[Exclusion, ...]:
        return tuple(
            Exclusion(
                model=e.model,
                tag=e.provider,
                layer=Layer.builtin,
                reason=f"{e.reason} (evidence: {e.evidence})",
                since=_midnight(e.since),
                until=_midnight(e.until),
                evidence=e.rounds,
            )
            for e in self.entries
        )


def load_builtin_exclusions(directory: Path) -> tuple[Exclusion, ...]:
    """The reviewed built-in list; ProbeDefinitionError naming the field when it is invalid."""
    return parse_definition(Path(directory), BUILTIN_FILE, BuiltinExclusions).exclusions()
