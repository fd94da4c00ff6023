"""Settings: a TOML file (``--config PATH``, ``CANARY_CONFIG`` or ``./canary.toml``) overridden by
``CANARY_*`` variables, read by pydantic-settings into frozen pydantic models.

Invalid settings raise :class:`SettingsError`: one readable line per problem, naming the setting
and where its value came from, never a secret.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as SourceError

from canary.config.bundled import bundled_dir
from canary.config.validation import Loc, problems, rule_broken
from canary.core.controls import Controls
from canary.core.identity import check_tag
from canary.core.model import NOTIFY_KINDS, NotifyKind
from canary.core.policy import default_look_gap_minutes
from canary.core.profiles import Profile

Language = Literal[
    "en", "es", "pt", "fr", "de", "it", "pl", "ru", "uk", "tr", "ar", "id", "vi", "th", "ja", "ko", "zh",
]  # fmt: skip
SUPPORTED_LANGUAGES: tuple[Language, ...] = get_args(Language)
Quantization = Literal[
    "int4", "fp4", "mxfp4", "nvfp4", "fp6", "int8", "fp8", "mxfp8", "fp16", "bf16", "fp32",
]  # fmt: skip
QUANTIZATION_ORDER: tuple[Quantization, ...] = get_args(Quantization)  # lowest first
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = Path("canary.toml")
# Secrets that may come from a file instead (Docker and Kubernetes secrets): ``<NAME>_FILE``;
# each is read as the variable beside it (the unprefixed OpenRouter key as CANARY_OPENROUTER_...).
SECRET_VARIABLES = {
    "OPENROUTER_API_KEY": "CANARY_OPENROUTER_API_KEY",
    "CANARY_ADMIN_TOKEN": "CANARY_ADMIN_TOKEN",
    "CANARY_DATABASE_URL": "CANARY_DATABASE_URL",
}
FILE_VARIANTS = tuple(SECRET_VARIABLES)
_LISTS = ("languages", "models")  # comma-separated in the environment


class SettingsError(ValueError):
    """Invalid settings: one line per problem, each naming the setting and where it was set."""


def _model_id(value: str) -> str:
    author, _, slug = value.partition("/")
    if not author or not slug or "/" in slug:
        raise ValueError(f"{value!r} is not of the form author/slug")
    return value


ModelId = Annotated[str, AfterValidator(_model_id)]


def _profile_name(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", value):
        raise ValueError(
            f"{value[:70]!r} is not a profile name: lowercase letters, digits, - and _"
        )
    return value


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value.rstrip("/")


def _database_url(value: str) -> str:
    if not value.startswith(("sqlite", "postgresql")):
        raise ValueError(f"{redact_url(value)!r} is neither sqlite:/// nor postgresql+psycopg://")
    return value


def _proxy_url(value: SecretStr) -> SecretStr:
    proxy = value.get_secret_value()
    if proxy and not proxy.startswith(("http://", "https://")):
        raise ValueError(
            "should be an http:// or https:// URL"
        )  # not shown: it may hold a password
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
Positive = Annotated[float, Field(gt=0)]
NotNegative = Annotated[float, Field(ge=0)]


class _Table(BaseModel):
    """A table of settings: unknown keys are refused; frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def replace(self, **changes: object) -> Self:
        """A copy with ``changes``, validated again (``model_copy`` would not validate them)."""
        return self.model_validate({**self.__dict__, **changes})


class MaxPrice(_Table):
    """USD per million tokens."""

    prompt: NotNegative | None = None
    completion: NotNegative | None = None


class ModelSettings(_Table):
    id: ModelId
    # endpoint tags (slugs)
    positive_controls: tuple[Annotated[str, AfterValidator(check_tag)], ...] = ()
    capacity_floor: int = Field(default=2, ge=0)
    # the controls are published as excluded (layer control) unless this is false
    publish_controls: StrictBool = True
    max_price: MaxPrice | None = None
    min_quantization: Quantization | None = None

    @property
    def controls(self) -> Controls:
        """The positive controls as the published list holds them (never usable capacity)."""
        return Controls.of(self.positive_controls, self.publish_controls)


class ProfileSettings(_Table):
    """A task profile (``[[profiles]]``): what a job requires of an endpoint; each requirement
    left unset is not required (see :mod:`canary.core.profiles`)."""

    name: Annotated[str, AfterValidator(_profile_name)]
    models: tuple[Annotated[str, AfterValidator(_model_id)], ...] = ()  # empty: every model
    needs: tuple[Literal["structured_outputs", "tools"], ...] = ()
    max_ttft_p95_s: Positive | None = None
    min_context_length: int | None = Field(default=None, ge=1)
    max_price: MaxPrice | None = None
    min_quantization: Quantization | None = None
    unknown_quantization: Literal["allow", "exclude"] = "allow"
    max_error_rate: float | None = Field(default=None, ge=0, le=1)

    @property
    def rules(self) -> Profile:

        said = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        price = self.max_price or MaxPrice()
        return Profile(
            self.name,
            self.models,
            frozenset(self.needs),
            self.max_ttft_p95_s,
            self.min_context_length,
            price.prompt,
            price.completion,
            self.min_quantization,
            self.unknown_quantization,
            self.max_error_rate,
            QUANTIZATION_ORDER,
            "s-" + hashlib.sha256(said.encode()).hexdigest()[:10],
        )


class OpenRouterSettings(_Table):
    base_url: HttpUrl = "https://openrouter.ai/api/v1"
    api_key: SecretStr = SecretStr("")
    connect_timeout_s: Positive = 5.0
    first_token_timeout_s: Positive = 30.0
    stream_timeout_s: Positive = 60.0
    listing_deadline_s: Positive = 30.0
    max_tokens: int = Field(default=400, ge=16)
    # http(s)://[user:password@]host:port for every request to OpenRouter; unset: HTTPS_PROXY,
    # HTTP_PROXY, ALL_PROXY and NO_PROXY apply. A secret: it may hold a password.
    proxy: Annotated[SecretStr, AfterValidator(_proxy_url)] = SecretStr("")


class Webhook(_Table):
    """A receiver of notifications. With a ``secret`` (or ``secret_file``, read at load), each
    delivery is signed with HMAC-SHA256 (see :mod:`canary.service.notify`); without one, unsigned."""

    url: str = Field(repr=False)  # a hook's URL often holds its token
    format: Literal["json", "slack"] = "json"
    secret: SecretStr = SecretStr("")
    secret_file: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _secret_from_file(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("secret_file") in (None, ""):
            return data
        if data.get("secret"):
            raise ValueError("set secret or secret_file, not both")
        return {**data, "secret": read_secret_file(Path(data["secret_file"]), "secret_file")}


class _SecretUrl(_Table):
    """A URL that holds a secret: ``url_file`` reads it from a file, and it is never shown."""

    url: SecretStr = SecretStr("")
    url_file: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _url_from_file(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("url_file") in (None, ""):
            return data
        if data.get("url"):
            raise ValueError("set url or url_file, not both")
        return {**data, "url": read_secret_file(Path(data["url_file"]), "url_file")}


class Heartbeat(_SecretUrl):
    """A dead-man's switch (healthchecks.io's convention, which Cronitor and others accept): the
    URL is pinged after each slot's round, with ``/fail`` appended when the round was not done."""

    timeout_s: Positive = 10.0


class AppriseNotifier(_SecretUrl):
    """An Apprise target (``slack://…``, ``mailto://…``, ``ntfy://…``: one URL) that the outbox
    sends ``events`` to. Named in logs and in the audit by ``name``, else by its place and scheme."""

    name: str | None = Field(default=None, min_length=1, max_length=64)
    events: tuple[NotifyKind, ...] = NOTIFY_KINDS
    timeout_s: Positive = 10.0

    @model_validator(mode="after")
    def _an_apprise_url(self) -> Self:
        scheme, sep, _ = self.url.get_secret_value().partition("://")
        if not (sep and scheme.isalnum()):  # the URL itself is never shown
            raise ValueError("url (or url_file) must hold an Apprise URL, scheme://…")
        return self

    def label(self, index: int) -> str:
        return self.name or f"notifiers[{index}]:{self.url.get_secret_value().partition(':')[0]}"


class ReportToken(_Table):
    """A named token apps send their reports with (never the admin token)."""

    name: Annotated[str, Field(min_length=1, max_length=100)]
    token: SecretStr = SecretStr("")
    token_file: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _token_from_file(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("token_file") in (None, ""):
            if isinstance(data, dict) and not data.get("token"):
                raise ValueError("set token_file (or token)")
            return data
        if data.get("token"):
            raise ValueError("set token or token_file, not both")
        return {**data, "token": read_secret_file(Path(data["token_file"]), "token_file")}


class ReportSettings(_Table):
    """Apps' reports (``POST /v1/reports``): who may send them and how fast."""

    tokens: tuple[ReportToken, ...] = ()
    per_token_per_minute: int = Field(default=60, ge=1)
    per_endpoint_per_minute: int = Field(default=10, ge=1)
    max_note_chars: int = Field(default=1000, ge=0, le=4000)


class OtelSettings(_Table):
    """OpenTelemetry traces of rounds (needs ``pip install canary[otel]``); off by default."""

    # OTLP over HTTP, e.g. "http://collector:4318" (+ /v1/traces)
    endpoint: HttpUrl | None = None
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else "canary"
    # how long a stop waits for the collector to take the queued spans before dropping them
    shutdown_timeout_s: Positive = 5.0


class EqualityCheck(_Table):
    """The equality check (docs/equality.md): advisory, so out of the policy version."""

    enabled: StrictBool = True
    interval_hours: Positive = 24.0
    level: float = Field(default=0.01, gt=0, le=0.2)  # the false-discovery rate per model
    min_peers: int = Field(default=3, ge=2)


class Policy(_Table):
    """The quarantine rules' numbers. Their hash is the policy version recorded with decisions."""

    failing_rounds: int = Field(default=2, ge=1)
    recovery_rounds: int = Field(default=2, ge=1)
    ladder_days: tuple[float, ...] = (1.0, 3.0, 7.0)
    ladder_reset_days: Positive = 14.0
    # "most endpoints": more than this share
    model_wide_share: float = Field(default=0.5, gt=0, le=1)
    # a contract's fail older than this starts its count again (hours)
    streak_max_age_hours: Positive = 6.0
    # a look counts only when its round started at least this long after the previous counted
    # one (minutes); None: the smaller of 10 and half of interval_minutes
    min_look_gap_minutes: NotNegative | None = None


class Settings(BaseSettings, _Table):
    """Everything canary is told. Built in code, it holds what it is given; :func:`load_settings`
    reads the file and the environment into it."""

    model_config = SettingsConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, case_sensitive=True
    )

    # it may hold a password: never in a repr
    database_url: Annotated[str, AfterValidator(_database_url)] = Field(
        default="sqlite:///canary.db", repr=False
    )
    mode: Literal["observe", "enforce"] = "observe"
    interval_minutes: Positive = 30.0
    ttft_threshold_s: Positive = 10.0
    ttft_samples: int = Field(default=3, ge=1)
    languages: tuple[Language, ...] = Field(default=SUPPORTED_LANGUAGES, min_length=1)
    admin_token: SecretStr = SecretStr("")
    concurrency: int = Field(default=32, ge=1)
    per_provider_concurrency: int = Field(default=4, ge=1)
    daily_budget_usd: Positive | None = None
    latency_degraded_p95_s: Positive = 5.0
    # a round lease not renewed for this long is dead
    lease_ttl_s: Positive = 90.0
    lease_renew_s: Positive = 30.0  # renewed this often while a round runs
    log_format: Literal["auto", "console", "json"] = "auto"
    # a running round's time to finish on stop
    shutdown_grace_s: NotNegative = 20.0
    startup_wait_s: NotNegative = 60.0  # how long start-up retries the store
    # probes and other evidence older are pruned
    retention_days: int = Field(default=30, ge=7)
    probes_dir: Path = bundled_dir("probes")  # the copy installed with the package
    openrouter: OpenRouterSettings = OpenRouterSettings()
    policy: Policy = Policy()
    otel: OtelSettings = OtelSettings()
    models: tuple[ModelSettings, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    heartbeat: Heartbeat = Heartbeat()
    notifiers: tuple[AppriseNotifier, ...] = ()
    profiles: tuple[ProfileSettings, ...] = ()
    equality: EqualityCheck = EqualityCheck()
    reports: ReportSettings = ReportSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Built in code, the settings are what the code says: the process environment comes in
        only through :func:`load_settings`, which brings the file and the environment."""
        return (init_settings,)

    @model_validator(mode="after")
    def _rules_across_settings(self) -> Self:
        policy, o, threshold = self.policy, self.openrouter, self.ttft_threshold_s
        needed = policy.failing_rounds * self.interval_minutes / 60
        if policy.streak_max_age_hours < needed:
            raise rule_broken(
                "policy.streak_max_age_hours",
                f"{policy.streak_max_age_hours:g} h is shorter than failing_rounds x "
                f"interval_minutes ({needed:g} h): no streak could reach the threshold",
            )
        # A stream silent for first_token_timeout_s counts as one slow ttft sample; the client
        # waits min(first_token_timeout_s, stream_timeout_s) for it: both must reach the
        # threshold, or a stall would be cut before it could count as slow.
        for name, timeout in (
            ("first_token_timeout_s", o.first_token_timeout_s),
            ("stream_timeout_s", o.stream_timeout_s),
        ):
            if timeout < threshold:
                raise rule_broken(
                    f"openrouter.{name}",
                    f"{timeout:g} s is below ttft_threshold_s ({threshold:g} s); a stream "
                    "silent that long must count as slow",
                )
        seen: set[str] = set()
        for i, profile in enumerate(self.profiles):
            if profile.name in seen:
                raise rule_broken(f"profiles.{i}.name", f"{profile.name!r} names two profiles")
            seen.add(profile.name)
            unwatched = [m for m in profile.models if self.models and m not in self.model_ids]
            if unwatched:
                raise rule_broken(
                    f"profiles.{i}.models", f"{', '.join(unwatched)}: not a watched model"
                )
        admin = self.admin_token.get_secret_value()
        if admin and any(t.token.get_secret_value() == admin for t in self.reports.tokens):
            raise rule_broken("reports.tokens", "a report token must not be the admin token")
        # Rounds on schedule are one interval apart: a longer gap would count none of them.
        gap = policy.min_look_gap_minutes
        if gap is not None and gap > self.interval_minutes:
            raise rule_broken(
                "policy.min_look_gap_minutes",
                f"{gap:g} min is longer than interval_minutes ({self.interval_minutes:g} min); "
                "rounds on schedule would never count",
            )
        labels = [n.label(i) for i, n in enumerate(self.notifiers)]
        if len(set(labels)) < len(labels):
            raise rule_broken("notifiers", "two notifiers have the same name")
        return self

    @property
    def min_look_gap_minutes(self) -> float:
        """The look gap in force: the setting, else the smaller of 10 minutes and half the
        interval."""
        gap = self.policy.min_look_gap_minutes
        return default_look_gap_minutes(self.interval_minutes) if gap is None else gap

    def model(self, model_id: str) -> ModelSettings:
        for m in self.models:
            if m.id == model_id:
                return m
        return ModelSettings(id=model_id)

    @property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)

    @property
    def profile_rules(self) -> tuple[Profile, ...]:
        return tuple(p.rules for p in self.profiles)

    @property
    def model_controls(self) -> dict[str, Controls]:
        """Each watched model's positive controls, as the published list holds them."""
        return {m.id: m.controls for m in self.models}


def redact_url(url: str) -> str:
    """Drop a password from a database URL before it is shown anywhere."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user, has_password, _ = creds.partition(":")
        return f"{scheme}://{user}:***@{host}" if has_password else url
    return url


def read_secret_file(path: Path, name: str) -> str:
    """The secret held in ``path`` (one trailing newline dropped); a ValueError naming ``name``
    and the path, never the content, when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"{name} {str(path)!r} cannot be read: {why}") from None
    value = text.removesuffix("\n").removesuffix("\r")
    if not value:
        raise ValueError(f"{name} {str(path)!r} is empty")
    return value


def env_value(env: Mapping[str, str], var: str) -> str | None:
    """``var`` from the environment, or the content of the file ``<var>_FILE`` names."""
    from_file = env.get(f"{var}_FILE") if var in FILE_VARIANTS else None
    if from_file:
        if env.get(var):
            raise SettingsError(f"environment: both {var} and {var}_FILE are set: use one")
        try:
            return read_secret_file(Path(from_file), f"{var}_FILE")
        except ValueError as exc:
            raise SettingsError(f"environment: {exc}") from None
    return env.get(var) or None


class _Environment(EnvSettingsSource):
    """The ``CANARY_*`` variables as pydantic-settings reads them (``CANARY_OPENROUTER_BASE_URL``
    is ``[openrouter] base_url``), from ``env`` rather than the process's. Written here is only
    what pydantic-settings has no way to say: the unprefixed ``OPENROUTER_API_KEY``, the
    ``*_FILE`` variants of the secrets, comma-separated lists, and ``CANARY_MODELS`` keeping the
    file's details of the models it names."""

    def __init__(self, env: Mapping[str, str], file_models: object) -> None:
        self.env, self.origin = env, dict[str, str]()
        self.file_models = file_models if isinstance(file_models, list) else []
        super().__init__(
            Settings, case_sensitive=False, env_prefix="CANARY_", env_nested_delimiter="_",
            env_nested_max_split=1, env_ignore_empty=True,
        )  # fmt: skip

    def _load_env_vars(self) -> dict[str, str]:
        found = {name.lower(): value for name, value in self.env.items() if value}
        self.origin = {name.lower(): name for name in self.env}
        for variable, read_as in SECRET_VARIABLES.items():
            value = env_value(self.env, variable)
            if value is not None and (variable == read_as or not self.env.get(read_as)):
                found[read_as.lower()] = value
                self.origin[read_as.lower()] = variable
        return found

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        if field_name not in _LISTS:
            return super().decode_complex_value(field_name, field, value)  # JSON
        listed = [part.strip() for part in str(value).split(",") if part.strip()]
        if field_name == "languages":
            return listed
        known = {m.get("id"): m for m in self.file_models if isinstance(m, dict)}
        return [known.get(model_id, {"id": model_id}) for model_id in listed]

    def blame(self, loc: Loc) -> str | None:
        """The variable that gave the value at ``loc``, if one did."""
        for end in range(len(loc), 0, -1):
            name = "canary_" + "_".join(str(part) for part in loc[:end])
            if name in self.env_vars:
                return self.origin.get(name, name.upper())
        return None


def _described(error: ValidationError, source: str, env: _Environment | None = None) -> str:
    lines = []
    for loc, line in problems(error, "setting"):
        variable = env.blame(loc) if env is not None else None
        lines.append(f"{'environment ' + variable if variable else source}: {line}")
    return "\n".join(lines)


def with_changes(settings: Settings, source: str, **changes: object) -> Settings:
    """``settings`` with ``changes``, validated again (rules across settings included)."""
    try:
        return settings.replace(**changes)
    except ValidationError as exc:
        raise SettingsError(_described(exc, source)) from None


def load_settings(path: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read the TOML file (if any) and the environment; raise SettingsError on anything invalid."""
    env = os.environ if env is None else env
    explicit = path is not None or bool(env.get("CANARY_CONFIG"))
    path = path or Path(env.get("CANARY_CONFIG") or DEFAULT_CONFIG)
    if explicit and not path.is_file():
        raise SettingsError(f"{path}: no such settings file")
    try:
        file = TomlConfigSettingsSource(Settings, toml_file=path)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read: {exc.strerror}") from None
    environment = _Environment(env, file.toml_data.get("models"))
    try:
        return Settings(_build_sources=((environment, file), {}))
    except SourceError as exc:  # a variable that should hold JSON does not
        raise SettingsError(f"environment: {exc}: {exc.__cause__}") from None
    except ValidationError as exc:
        source = str(path) if path.is_file() else "environment"
        raise SettingsError(_described(exc, source, environment)) from None
