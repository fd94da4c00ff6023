"""Probe definitions are data: load, validate and checksum everything under ``probes/``.

Layout of the directory (see ``probes/`` in the repository)::

    prompts/<lang>.yaml      system + ttft / refusal / language prompts, one file per language
    schema.json              the structured-output probe: name, prompt, JSON Schema
    tools.json               the tool-call probe: prompt and the record_scene_change function
    refusal_patterns.yaml    high-confidence refusal regexes per language, with self-test examples
    builtin_exclusions.yaml  the reviewed built-in exclusion list

Every file is read once into frozen pydantic models that reject unknown keys
(:mod:`canary.config.definitions`); any problem raises :class:`ProbeDefinitionError` naming the file
and the field. Each definition carries the sha256
of its canonical content (comments and formatting do not count), recorded with every probe so a
verdict says which version of the probe produced it.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Literal

from jsonschema.exceptions import SchemaError
from pydantic import AfterValidator, Field, JsonValue, field_validator

from canary.config.definitions import (
    BUILTIN_FILE,
    BuiltinExclusions,
    ProbeDefinitionError,
    Strict,
    parse_definition,
)
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.common import canonical_json, schema_validator
from canary.core.contracts.refusal import find_refusal
from canary.core.model import Contract, Endpoint, Exclusion

__all__ = ["ProbeDefinitionError", "ProbeSet", "ProbeRequest", "load_probes"]

NONCE = "{nonce}"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class UnknownProbeLanguage(LookupError):
    """A probe was requested in a language that was not loaded."""


def _with_nonce(value: str) -> str:
    if NONCE not in value:
        raise ValueError(f"must contain the {NONCE} placeholder (so no cache can answer)")
    return value


def _check_schema(schema: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """A valid JSON Schema for an object that strict structured outputs accept."""
    try:
        schema_validator(schema)
    except SchemaError as exc:
        raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        raise ValueError("must be an object with additionalProperties: false")
    properties, required = schema.get("properties"), schema.get("required")
    named = set(properties) if isinstance(properties, dict) else set()
    missing = sorted(named - ({str(r) for r in required} if isinstance(required, list) else set()))
    if missing:
        raise ValueError(f"strict mode needs every property required; not: {missing}")
    return schema


Prompt = Annotated[str, AfterValidator(_with_nonce)]
StrictSchema = Annotated[dict[str, JsonValue], AfterValidator(_check_schema)]


class LanguagePrompts(Strict):
    system: str = Field(min_length=1)
    ttft: Prompt
    refusal: Prompt
    language: Prompt


class SchemaProbe(Strict):
    name: str = Field(pattern=_NAME.pattern)
    system: str = Field(min_length=1)
    prompt: Prompt
    json_schema: StrictSchema = Field(alias="schema")


class ToolFunction(Strict):
    name: str = Field(pattern=_NAME.pattern)
    description: str = Field(min_length=1)
    parameters: StrictSchema


class ToolSpec(Strict):
    type: Literal["function"]
    function: ToolFunction


class ToolsProbe(Strict):
    system: str = Field(min_length=1)
    prompt: Prompt
    tool: ToolSpec


class RefusalLanguage(Strict):
    patterns: tuple[str, ...] = Field(min_length=1)
    refusals: tuple[str, ...] = ()  # examples the patterns must catch (checked at load)
    benign: tuple[str, ...] = ()  # examples they must not match (checked at load)

    @field_validator("patterns")
    @classmethod
    def _compile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for i, pattern in enumerate(value, 1):
            try:
                re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"pattern #{i} {pattern!r} is not a valid regex: {exc}") from None
        return value

    def compiled(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p, re.IGNORECASE) for p in self.patterns)


class RefusalPatterns(Strict):
    languages: dict[str, RefusalLanguage]

    @field_validator("languages")
    @classmethod
    def _known(cls, value: dict[str, RefusalLanguage]) -> dict[str, RefusalLanguage]:
        unknown = sorted(set(value) - set(SUPPORTED_LANGUAGES))
        if unknown:
            raise ValueError(f"unsupported language(s) {', '.join(unknown)}")
        if "en" not in value:
            raise ValueError("English patterns are required: they apply to every language")
        return value


@dataclass(frozen=True)
class ProbeRequest:
    """One probe ready to send: the client adds model, provider pinning and stream options."""

    contract: Contract
    language: str
    nonce: str
    checksum: str
    body: dict[str, JsonValue]
    parameters: tuple[str, ...] = ()  # supported_parameters relied on (require_parameters)


def _sha(value: JsonValue) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ProbeSet:
    """Validated probe definitions for a set of languages. Build it with :func:`load_probes`."""

    languages: tuple[str, ...]
    prompts: Mapping[str, LanguagePrompts]
    schema_probe: SchemaProbe
    tools_probe: ToolsProbe
    patterns: Mapping[str, tuple[re.Pattern[str], ...]]
    builtin_exclusions: tuple[Exclusion, ...]
    checksums: Mapping[str, str]
    _request_checksums: Mapping[tuple[Contract, str], str] = field(repr=False)

    @property
    def version(self) -> str:
        """One digest over every definition's checksum."""
        return _sha(dict(self.checksums))

    @cached_property
    def schema(self) -> dict[str, JsonValue]:
        """The schema probe's JSON schema, made once: every probe and judgement of the process
        shares it, so it is read, never modified."""
        return copy.deepcopy(self.schema_probe.json_schema)

    @property
    def schema_name(self) -> str:
        return self.schema_probe.name

    @cached_property
    def tool(self) -> dict[str, JsonValue]:
        """The tools probe's tool as sent, made once and shared like :attr:`schema`."""
        return self.tools_probe.tool.model_dump(mode="json")

    @property
    def tool_name(self) -> str:
        return self.tools_probe.tool.function.name

    def refusal_patterns(self, language: str) -> tuple[re.Pattern[str], ...]:
        """The language's own patterns, then the English ones (English only for an unknown one)."""
        own = self.patterns.get(language, ()) if language != "en" else ()
        return own + self.patterns["en"]

    def applicable(self, contract: Contract, endpoint: Endpoint) -> bool:
        """schema needs ``structured_outputs`` (``response_format`` alone may mean JSON mode only,
        openrouter-api.md §5); tools needs ``tools``; the text contracts apply everywhere."""
        if contract is Contract.schema:
            return endpoint.supports("structured_outputs")
        if contract is Contract.tools:
            return endpoint.supports("tools")
        return True

    def forces_tool(self, endpoint: Endpoint) -> bool:
        return endpoint.supports("tool_choice")

    def checksum_for(self, contract: Contract, language: str) -> str:
        try:
            return self._request_checksums[(contract, language)]
        except KeyError:
            raise UnknownProbeLanguage(
                f"no probe in {language!r} (loaded: {', '.join(self.languages)})"
            ) from None

    def request(
        self, contract: Contract, language: str, nonce: str, endpoint: Endpoint, max_tokens: int
    ) -> ProbeRequest:
        """The body of one probe. ``max_tokens`` is capped by the endpoint's own maximum."""
        checksum = self.checksum_for(contract, language)
        max_tokens = capped_max_tokens(max_tokens, endpoint.max_completion_tokens)
        parameters: tuple[str, ...] = ()
        extra: dict[str, JsonValue] = {}
        if contract is Contract.schema:
            system, prompt = self.schema_probe.system, self.schema_probe.prompt
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": self.schema_name, "strict": True, "schema": self.schema},
            }
            parameters = ("response_format", "structured_outputs")
        elif contract is Contract.tools:
            system, prompt = self.tools_probe.system, self.tools_probe.prompt
            extra["tools"] = [self.tool]
            parameters = ("tools",)
            if self.forces_tool(endpoint):
                extra["tool_choice"] = _tool_choice(endpoint, self.tool_name)
                parameters += ("tool_choice",)
        else:
            text = self.prompts[language]
            system = text.system
            prompt = {Contract.ttft: text.ttft, Contract.refusal: text.refusal}.get(
                contract, text.language
            )
        body: dict[str, JsonValue] = {
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt.replace(NONCE, nonce)},
            ],
            "max_tokens": max_tokens,
            **extra,
        }
        return ProbeRequest(contract, language, nonce, checksum, body, parameters)


def capped_max_tokens(max_tokens: int, endpoint_max: int | None) -> int:
    """A probe's ``max_tokens``: the configured one, capped by the endpoint's own maximum."""
    return min(max_tokens, endpoint_max) if endpoint_max else max_tokens


def _tool_choice(endpoint: Endpoint, name: str) -> dict[str, JsonValue] | str:
    """Name the function, unless the endpoint says it only honours ``required``."""
    support = endpoint.raw.get("supports_tool_choice")
    if isinstance(support, dict) and support.get("function") is False and support.get("required"):
        return "required"
    return {"type": "function", "function": {"name": name}}


# ---------------------------------------------------------------- loading


def _self_test(name: str, refusal: RefusalPatterns) -> None:
    english = refusal.languages["en"].compiled()
    for lang, spec in refusal.languages.items():
        own = spec.compiled()
        for example in spec.refusals:
            if find_refusal(example, own) is None:
                raise ProbeDefinitionError(
                    f"{name}: {lang}: no pattern catches refusal {example!r}"
                )
        for example in spec.benign:
            match = find_refusal(example, own + english)
            if match is not None:
                raise ProbeDefinitionError(
                    f"{name}: {lang}: benign example {example!r} matches ({match.group(0)!r})"
                )


def load_probes(directory: Path, languages: Sequence[str]) -> ProbeSet:
    """Load and validate every definition; raise ProbeDefinitionError with a readable message."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProbeDefinitionError(
            f"{directory}: probe definitions directory not found (probes_dir, CANARY_PROBES_DIR)"
        )
    languages = tuple(languages)
    unsupported = [lang for lang in languages if lang not in SUPPORTED_LANGUAGES]
    if unsupported or not languages:
        raise ProbeDefinitionError(f"unsupported or no languages requested: {unsupported}")
    present = sorted(p.stem for p in (directory / "prompts").glob("*.yaml"))
    for stem in present:
        if stem not in SUPPORTED_LANGUAGES:
            raise ProbeDefinitionError(
                f"{directory.name}/prompts/{stem}.yaml: not a supported language"
            )
    for lang in languages:
        if lang not in present:
            raise ProbeDefinitionError(f"{directory.name}/prompts/{lang}.yaml: missing prompts")
    prompts = {
        stem: parse_definition(directory, f"prompts/{stem}.yaml", LanguagePrompts)
        for stem in present
    }
    schema_probe = parse_definition(directory, "schema.json", SchemaProbe)
    tools_probe = parse_definition(directory, "tools.json", ToolsProbe)
    refusal = parse_definition(directory, "refusal_patterns.yaml", RefusalPatterns)
    _self_test(f"{directory.name}/refusal_patterns.yaml", refusal)
    for lang in languages:
        if lang not in refusal.languages:
            raise ProbeDefinitionError(
                f"{directory.name}/refusal_patterns.yaml: missing patterns for {lang!r}"
            )
    builtin = parse_definition(directory, BUILTIN_FILE, BuiltinExclusions)

    checksums: dict[str, str] = {}
    for lang in languages:
        checksums[f"prompts/{lang}"] = _sha(prompts[lang].model_dump(mode="json"))
        checksums[f"refusal_patterns/{lang}"] = _sha(
            list[JsonValue](refusal.languages[lang].patterns)
        )
    checksums["refusal_patterns/en"] = _sha(list[JsonValue](refusal.languages["en"].patterns))
    checksums["schema"] = _sha(schema_probe.model_dump(mode="json", by_alias=True))
    checksums["tools"] = _sha(tools_probe.model_dump(mode="json"))
    checksums["builtin_exclusions"] = _sha(builtin.model_dump(mode="json"))

    per_request: dict[tuple[Contract, str], str] = {}
    for lang in languages:
        text = checksums[f"prompts/{lang}"]
        for contract in (Contract.ttft, Contract.language, Contract.hygiene):
            per_request[(contract, lang)] = text
        per_request[(Contract.refusal, lang)] = _sha(
            [text, checksums[f"refusal_patterns/{lang}"], checksums["refusal_patterns/en"]]
        )
        per_request[(Contract.schema, lang)] = checksums["schema"]
        per_request[(Contract.tools, lang)] = checksums["tools"]

    exclusions = builtin.exclusions()
    return ProbeSet(
        languages=languages,
        prompts=MappingProxyType({lang: prompts[lang] for lang in languages}),
        schema_probe=schema_probe,
        tools_probe=tools_probe,
        patterns=MappingProxyType(
            {lang: spec.compiled() for lang, spec in refusal.languages.items()}
        ),
        builtin_exclusions=exclusions,
        checksums=MappingProxyType(dict(sorted(checksums.items()))),
        _request_checksums=MappingProxyType(per_request),
    )
