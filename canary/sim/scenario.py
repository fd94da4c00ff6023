"""The scenario file: models, their provider endpoints, injected faults and a timeline.

`load_scenario` accepts a path, YAML text already parsed into a dict, or a `Scenario`, and
raises :class:`ScenarioError` with one readable line per problem, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from canary.config.definitions import Strict
from canary.config.settings import SUPPORTED_LANGUAGES, Language, ModelId
from canary.config.validation import problems

Quantization = Literal[
    "int4", "int8", "fp4", "mxfp4", "nvfp4", "fp6",
    "fp8", "mxfp8", "fp16", "bf16", "fp32", "unknown",
]  # fmt: skip
DEFAULT_PARAMETERS = (
    "max_tokens", "temperature", "top_p", "stop", "seed", "response_format", "structured_outputs",
)  # fmt: skip


M = TypeVar("M", bound=BaseModel)


class ScenarioError(ValueError):
    """The scenario is invalid; the message names the field and what is wrong."""


class FaultKind(StrEnum):
    slow_first_token = "slow_first_token"
    stall = "stall"
    garbage_prefix = "garbage_prefix"
    refusal = "refusal"
    content_filter = "content_filter"
    empty = "empty"
    truncate = "truncate"
    schema_break = "schema_break"
    language_drift = "language_drift"
    language_mix = "language_mix"
    mojibake = "mojibake"
    repetition = "repetition"
    http_error = "http_error"
    disconnect = "disconnect"
    midstream_error = "midstream_error"
    served_by = "served_by"
    served_model = "served_model"
    reasoning_first = "reasoning_first"
    tool_no_call = "tool_no_call"
    tool_unknown_name = "tool_unknown_name"
    tool_invalid_json = "tool_invalid_json"
    tool_schema_mismatch = "tool_schema_mismatch"
    quantized = "quantized"
    substituted = "substituted"
    template_broken = "template_broken"


LANGUAGES = SUPPORTED_LANGUAGES
Count = Annotated[int, Field(ge=0)]
ErrorStatus = Annotated[int, Field(ge=400, le=599)]


class _Fault(Strict):
    """One injected fault: its `kind`, `rate` (probability per request), its parameters."""

    rate: float = Field(default=1.0, ge=0, le=1)
    when_language: Language | None = None  # applies only when the request is in this language

    @model_validator(mode="before")
    @classmethod
    def _params_inline(cls, data: object) -> object:
        """A fault's parameters may also sit under `params:`."""
        if isinstance(data, dict) and isinstance(data.get("params"), dict):
            return {**{k: v for k, v in data.items() if k != "params"}, **data["params"]}
        return data


class SlowFirstToken(_Fault):
    kind: Literal[FaultKind.slow_first_token]
    ttft_ms: Count


class Stall(_Fault):
    kind: Literal[FaultKind.stall]
    after_tokens: Count = 3


class SchemaBreak(_Fault):
    kind: Literal[FaultKind.schema_break]
    how: Literal["prose", "missing_field", "invalid_json"] = "invalid_json"


class LanguageDrift(_Fault):
    kind: Literal[FaultKind.language_drift]
    to: Language


class LanguageMix(_Fault):
    kind: Literal[FaultKind.language_mix]
    with_: Language = Field(alias="with")
    share: float = Field(default=0.5, ge=0, le=1)


class HttpError(_Fault):
    kind: Literal[FaultKind.http_error]
    status: ErrorStatus = 503
    retry_after: Count | None = None


class Disconnect(_Fault):
    kind: Literal[FaultKind.disconnect]
    after_tokens: Count = 3


class MidstreamError(_Fault):
    kind: Literal[FaultKind.midstream_error]
    after_tokens: Count = 3
    code: ErrorStatus = 502


class ServedBy(_Fault):
    kind: Literal[FaultKind.served_by]
    tag: str = Field(min_length=1)


class ServedModel(_Fault):
    kind: Literal[FaultKind.served_model]
    id: str = Field(pattern=r"/")  # a model id, author/slug


class ReasoningFirst(_Fault):
    kind: Literal[FaultKind.reasoning_first]
    ms: Count = 500


class Quantized(_Fault):
    """The equality prompts answered by the same sampler at ``temperature`` times the asked
    one (canary.sim.ngram): a model served at lower precision."""

    kind: Literal[FaultKind.quantized]
    temperature: float = Field(default=0.8, gt=0, le=2)


class PlainFault(_Fault):
    """A fault without parameters."""

    kind: Literal[
        FaultKind.garbage_prefix, FaultKind.refusal, FaultKind.content_filter, FaultKind.empty,
        FaultKind.truncate, FaultKind.mojibake, FaultKind.repetition, FaultKind.tool_no_call,
        FaultKind.tool_unknown_name, FaultKind.tool_invalid_json, FaultKind.tool_schema_mismatch,
        FaultKind.substituted, FaultKind.template_broken,
    ]  # fmt: skip


Fault = Annotated[
    SlowFirstToken
    | Stall
    | SchemaBreak
    | LanguageDrift
    | LanguageMix
    | HttpError
    | Disconnect
    | MidstreamError
    | ServedBy
    | ServedModel
    | ReasoningFirst
    | Quantized
    | PlainFault,
    Field(discriminator="kind"),
]
FAULTS: TypeAdapter[tuple[Fault, ...]] = TypeAdapter(tuple[Fault, ...])


class Price(Strict):
    """USD per million tokens."""

    prompt: float = Field(default=0.2, ge=0)
    completion: float = Field(default=0.6, ge=0)


class Percentiles(Strict):
    p50: float
    p75: float
    p90: float
    p99: float


class Provider(Strict):
    """One endpoint of a model, as the scenario describes it."""

    tag: str
    name: str = ""
    quantization: Quantization | None = None
    price: Price = Field(default_factory=Price)
    context_length: int = Field(default=32768, gt=0)
    max_completion_tokens: int | None = Field(default=8192, gt=0)
    max_prompt_tokens: int | None = None
    supported_parameters: tuple[str, ...] = DEFAULT_PARAMETERS
    ttft_ms: float = Field(default=300, ge=0)
    jitter_ms: float = Field(default=0, ge=0)
    tokens_per_second: float = Field(default=80, gt=0)
    status: Literal[0, -1, -2, -3, -5, -10] = 0
    uptime_last_5m: float | None = 100.0
    uptime_last_30m: float | None = 99.8
    uptime_last_1d: float | None = 99.5
    latency_last_30m: Percentiles | None = None
    throughput_last_30m: Percentiles | None = None
    service_tier: str | None = None
    supports_implicit_caching: bool = False
    faults: tuple[Fault, ...] = ()

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        parts = value.split("/")
        if not value or len(parts) > 2 or not all(parts) or value != value.lower():
            raise ValueError(f"{value!r} is not a lowercase 'slug' or 'slug/suffix'")
        return value

    @model_validator(mode="after")
    def _default_name(self) -> Provider:
        if not self.name:
            object.__setattr__(self, "name", self.slug.replace("-", " ").title())
        return self

    @property
    def slug(self) -> str:
        return self.tag.split("/")[0]


class ModelSpec(Strict):
    id: ModelId
    name: str = ""
    description: str = "A role-play model served by the canary simulator."
    created: int = 1735000000
    providers: tuple[Provider, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        tags = [p.tag for p in self.providers]
        dup = {t for t in tags if tags.count(t) > 1}
        if dup:
            raise ValueError(f"duplicate provider tag(s): {', '.join(sorted(dup))}")
        if not self.name:
            object.__setattr__(self, "name", self.id.split("/")[1].replace("-", " ").title())
        return self


class ProviderPatch(Strict):
    """The endpoint fields a timeline `set` may change."""

    price: Price | None = None
    quantization: Quantization | None = None
    supported_parameters: tuple[str, ...] | None = None
    context_length: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    status: int | None = None
    uptime_last_30m: float | None = None
    ttft_ms: float | None = Field(default=None, ge=0)
    tokens_per_second: float | None = Field(default=None, gt=0)
    name: str | None = None


class TimelineEntry(Strict):
    """One change: `faults`, `set`, `remove` or `add`; `round` says when drills apply it."""

    round: int = 0
    model: str
    provider: str | None = None
    faults: tuple[Fault, ...] | None = None
    set: ProviderPatch | None = None
    remove: bool = False
    add: Provider | None = None

    @model_validator(mode="after")
    def _one_action(self) -> TimelineEntry:
        actions = [self.faults is not None, self.set is not None, self.remove, self.add is not None]
        if sum(actions) != 1:
            raise ValueError("a timeline entry needs exactly one of faults, set, remove, add")
        if self.add is None and not self.provider:
            raise ValueError("`provider` is required with faults, set or remove")
        return self


class Scenario(Strict):
    seed: int = 0
    text_bank: Path | None = None
    # "as_asked": canary's own prompts are answered at the length they ask for (one sentence for
    # a latency sample), as real models answer them; "long": every prose answer is two or three
    # passages of the text bank (6-12 sentences), as the simulator answered before
    answers: Literal["as_asked", "long"] = "as_asked"
    api_key: str | None = None  # when set, only this key is accepted
    models: tuple[ModelSpec, ...] = ()
    timeline: tuple[TimelineEntry, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        ids = [m.id for m in self.models]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"duplicate model id(s): {', '.join(sorted(dup))}")
        known = {m.id: {p.tag for p in m.providers} for m in self.models}
        for i, entry in enumerate(self.timeline):
            if entry.model not in known:
                raise ValueError(f"timeline.{i}.model: unknown model {entry.model!r}")
        for m, model in enumerate(self.models):
            for i, p in enumerate(model.providers):
                for j, f in enumerate(p.faults):
                    if isinstance(f, ServedBy) and f.tag not in known[model.id]:
                        raise ValueError(
                            f"models.{m}.providers.{i}.faults.{j}: served_by.tag {f.tag!r} "
                            f"is not a provider of {model.id}"
                        )
        return self


def _problems(exc: ValidationError, source: str) -> ScenarioError:
    return ScenarioError("\n".join(f"{source}: {line}" for _, line in problems(exc, "field")))


def parse(model: type[M], data: object, source: str = "scenario") -> M:
    """Validate `data` as `model`; a ScenarioError of one line per problem otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _problems(exc, source) from None


def parse_faults(data: object, source: str = "faults") -> tuple[Fault, ...]:
    """A list of faults (the control API's, a timeline entry's), validated."""
    try:
        return FAULTS.validate_python(data)
    except ValidationError as exc:
        raise _problems(exc, source) from None


def load_scenario(source: Scenario | Mapping[str, JsonValue] | Path | str) -> Scenario:
    """Load and validate a scenario from a Scenario, a dict, or a YAML file path."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return parse(Scenario, source)
    path = Path(source)
    return parse(Scenario, read_scenario_file(path), str(path))


def read_scenario_file(path: Path) -> dict[str, JsonValue]:
    """The YAML mapping of a scenario file, a relative text_bank resolved against the file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: scenario: expected a mapping at the top level")
    if isinstance(data.get("text_bank"), str) and not Path(data["text_bank"]).is_absolute():
        data["text_bank"] = str(path.parent / data["text_bank"])
    return data
