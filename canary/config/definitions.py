"""Reading the definition files under ``probes/`` into frozen pydantic models, and the reviewed
built-in exclusion list (operator commands read it through :func:`load_builtin_exclusions`
without loading every probe definition; :func:`canary.config.probe_set.load_probes` reads it once too).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from canary.config.validation import problems
from canary.core.identity import TAG_PATTERN
from canary.core.model import Exclusion, Layer, looks_of

BUILTIN_FILE = "builtin_exclusions.yaml"
# libyaml's safe loader when PyYAML was built with it (C, not Python, parses the probe files)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_M = TypeVar("_M", bound=BaseModel)


class ProbeDefinitionError(ValueError):
    """A probe definition file is missing or invalid; the message names the file and the field."""


def read_definition(directory: Path, relative: str) -> dict[str, JsonValue]:
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
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, _YAML_LOADER)
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


class Strict(BaseModel):
    """A definition: unknown keys are refused, frozen once read; ``schema`` may name a field
    called otherwise (an alias)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def parse_definition(directory: Path, relative: str, model: type[_M]) -> _M:
    """A definition file read as ``model``; ProbeDefinitionError naming the field otherwise."""
    try:
        return model.model_validate(read_definition(directory, relative))
    except ValidationError as exc:
        name = f"{directory.name}/{relative}"
        found = "\n".join(f"{name}: {line}" for _, line in problems(exc, "field"))
        raise ProbeDefinitionError(found) from None


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)


class BuiltinEntry(Strict):
    model: str = Field(pattern=r"^[^/\s]+/[^/\s]+$")
    provider: str = Field(pattern=TAG_PATTERN)  # a full tag, or a base slug: all
    reason: str = Field(min_length=1)
    since: date
    until: date | None = None
    evidence: str = Field(min_length=1)
    rounds: tuple[int, ...] = ()


class BuiltinExclusions(Strict):
    entries: tuple[BuiltinEntry, ...] = ()

    @model_validator(mode="after")
    def _one_entry_per_endpoint(self) -> BuiltinExclusions:
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
                evidence=looks_of(e.rounds),
            )
            for e in self.entries
        )


def load_builtin_exclusions(directory: Path) -> tuple[Exclusion, ...]:
    """The reviewed built-in list; ProbeDefinitionError naming the field when it is invalid."""
    return parse_definition(Path(directory), BUILTIN_FILE, BuiltinExclusions).exclusions()
