"""Reading the definition files under ``probes/``, and the reviewed built-in exclusion list.

Light on purpose (PyYAML and :mod:`canary.checked`, no pydantic): operator commands read the
built-in list through :func:`load_builtin_exclusions` without loading every probe definition,
and the full load (:func:`canary.probes.load_probes`) reads it through the same function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml

from canary.checked import Bound, FieldError, Record
from canary.core.identity import TAG_PATTERN
from canary.core.model import Exclusion, Layer, looks_of

BUILTIN_FILE = "builtin_exclusions.yaml"
_R = TypeVar("_R", bound=Record)


class ProbeDefinitionError(ValueError):
    """A probe definition file is missing or invalid; the message names the file and the field."""


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


def parse_record(directory: Path, relative: str, record: type[_R]) -> _R:
    """A definition file read as ``record``; ProbeDefinitionError naming the field otherwise."""
    try:
        return record.of(read_definition(directory, relative))
    except FieldError as exc:
        raise ProbeDefinitionError(f"{directory.name}/{relative}: {_describe(exc)}") from None


def _describe(error: FieldError) -> str:
    if error.kind != "value" or not error.loc:
        return str(error)
    return f"field {error.where!r}: {error.message}"


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)


NotEmpty = Bound(min_length=1)


@dataclass(frozen=True, kw_only=True)
class BuiltinEntry(Record):
    model: Annotated[str, Bound(pattern=r"^[^/\s]+/[^/\s]+$")]
    provider: Annotated[str, Bound(pattern=TAG_PATTERN)]  # a full tag, or a base slug: all
    reason: Annotated[str, NotEmpty]
    since: date
    until: date | None = None
    evidence: Annotated[str, NotEmpty]
    rounds: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BuiltinExclusions(Record):
    entries: tuple[BuiltinEntry, ...] = ()

    def check(self) -> None:
        seen: set[tuple[str, str]] = set()
        for e in self.entries:
            if (e.model, e.provider) in seen:
                raise ValueError(f"duplicate entry for {e.model} / {e.provider}")
            seen.add((e.model, e.provider))

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
    return parse_record(Path(directory), BUILTIN_FILE, BuiltinExclusions).exclusions()
