"""Settings: a TOML file (``--config PATH`` or ``./canary.toml``) overridden by ``CANARY_*`` variables.

Invalid settings raise :class:`SettingsError` whose message is one readable line naming the setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

SUPPORTED_LANGUAGES = (
    "en", "es", "pt", "fr", "de", "it", "pl", "ru", "uk", "tr", "ar", "id", "vi", "th", "ja", "ko", "zh",
)  # fmt: skip
QUANTIZATION_ORDER = (
    "int4",
    "fp4",
    "mxfp4",
    "nvfp4",
    "fp6",
    "int8",
    "fp8",
    "mxfp8",
    "fp16",
    "bf16",
    "fp32",
)
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = Path("canary.toml")


class SettingsError(ValueError):
    """A setting is invalid; the message names it and says what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MaxPrice(_Strict):
    """USD per million tokens."""

    prompt: float | None = Field(default=None, ge=0)
    completion: float | None = Field(default=None, ge=0)


class ModelSettings(_Strict):
    id: str
    positive_controls: tuple[str, ...] = ()  # endpoint tags (lowercase slugs)
    capacity_floor: int = Field(default=2, ge=0)
    max_price: MaxPrice | None = None
    min_quantization: str | None = None

    @field_validator("id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        author, _, slug = value.partition("/")
        if not author or not slug or "/" in slug:
            raise ValueError(f"{value!r} is not of the form author/slug")
        return value

    @field_validator("positive_controls")
    @classmethod
    def _controls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from canary.core.identity import check_tag

        return tuple(check_tag(tag) for tag in value)

    @field_validator("min_quantization")
    @classmethod
    def _quantization(cls, value: str | None) -> str | None:
        if value is not None and value not in QUANTIZATION_ORDER:
            raise ValueError(f"{value!r} is not one of {', '.join(QUANTIZATION_ORDER)}")
        return value


class OpenRouterSettings(_Strict):
    base_url: str = "https://openrouter.ai/api/v1"
    api_key: SecretStr = SecretStr("")
    connect_timeout_s: float = Field(default=5.0, gt=0)
    first_token_timeout_s: float = Field(default=30.0, gt=0)
    stream_timeout_s: float = Field(default=60.0, gt=0)
    listing_deadline_s: float = Field(default=30.0, gt=0)
    max_tokens: int = Field(default=400, ge=16)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value.rstrip("/")


class Webhook(_Strict):
    """A receiver of notifications. With a ``secret`` (or ``secret_file``, read at load), each
    delivery is signed with HMAC-SHA256 (see :mod:`canary.notify`); without one, unsigned."""

    url: str
    format: Literal["json", "slack"] = "json"
    secret: SecretStr = SecretStr("")
    secret_file: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _secret_from_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("secret_file") in (None, ""):
            return data
        if data.get("secret"):
            raise ValueError("set secret or secret_file, not both")
        return {**data, "secret": read_secret_file(Path(data["secret_file"]), "secret_file")}


class OtelSettings(_Strict):
    """OpenTelemetry traces of rounds (needs ``pip install canary[otel]``); off by default."""

    endpoint: str | None = None  # OTLP over HTTP, e.g. "http://collector:4318" (+ /v1/traces)
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else "canary"
    # how long a stop waits for the collector to take the queued spans before dropping them
    shutdown_timeout_s: float = Field(default=5.0, gt=0)

    @field_validator("endpoint")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value


class Policy(_Strict):
    """The quarantine rules' numbers. Their hash is the policy version recorded with decisions."""

    failing_rounds: int = Field(default=2, ge=1)
    recovery_rounds: int = Field(default=2, ge=1)
    ladder_days: tuple[float, ...] = (1, 3, 7)
    ladder_reset_days: float = Field(default=14, gt=0)
    model_wide_share: float = Field(default=0.5, gt=0, le=1)  # "most endpoints": more than this
    # a contract's fail older than this starts its count again (hours)
    streak_max_age_hours: float = Field(default=6, gt=0)


class Settings(_Strict):
    database_url: str = "sqlite:///canary.db"
    mode: Literal["observe", "enforce"] = "observe"
    interval_minutes: float = Field(default=30, gt=0)
    ttft_threshold_s: float = Field(default=10, gt=0)
    ttft_samples: int = Field(default=3, ge=1)
    languages: tuple[str, ...] = SUPPORTED_LANGUAGES
    admin_token: SecretStr = SecretStr("")
    concurrency: int = Field(default=32, ge=1)
    per_provider_concurrency: int = Field(default=4, ge=1)
    daily_budget_usd: float | None = Field(default=None, gt=0)
    latency_degraded_p95_s: float = Field(default=5.0, gt=0)
    lease_ttl_s: float = Field(default=90, gt=0)  # a round lease not renewed for this long is dead
    lease_renew_s: float = Field(default=30, gt=0)  # renewed this often while a round runs
    log_format: Literal["auto", "console", "json"] = "auto"
    shutdown_grace_s: float = Field(default=20, ge=0)  # a running round's time to finish on stop
    startup_wait_s: float = Field(default=60, ge=0)  # how long start-up retries the store
    retention_days: int = Field(default=30, ge=7)  # probes and other evidence older are pruned
    probes_dir: Path = PROJECT_ROOT / "probes"
    openrouter: OpenRouterSettings = OpenRouterSettings()
    policy: Policy = Policy()
    otel: OtelSettings = OtelSettings()
    models: tuple[ModelSettings, ...] = ()
    webhooks: tuple[Webhook, ...] = ()

    @field_validator("languages")
    @classmethod
    def _languages(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [lang for lang in value if lang not in SUPPORTED_LANGUAGES]
        if unknown:
            raise ValueError(
                f"unsupported {', '.join(unknown)} (supported: {', '.join(SUPPORTED_LANGUAGES)})"
            )
        if not value:
            raise ValueError("at least one language is needed")
        return value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        if not value.startswith(("sqlite", "postgresql")):
            raise ValueError(
                f"{_redact_url(value)!r} is neither sqlite:/// nor postgresql+psycopg://"
            )
        return value

    @model_validator(mode="after")
    def _streak_age_spans_the_failing_rounds(self) -> Settings:
        needed = self.policy.failing_rounds * self.interval_minutes / 60
        if self.policy.streak_max_age_hours < needed:
            raise ValueError(
                f"policy.streak_max_age_hours = {self.policy.streak_max_age_hours:g} is shorter "
                f"than failing_rounds x interval_minutes ({needed:g} h): no streak could reach "
                "the threshold"
            )
        return self

    @model_validator(mode="after")
    def _stall_is_slowness(self) -> Settings:
        # A stream silent for first_token_timeout_s counts as one slow ttft sample: the wait
        # must reach the threshold, or a stall would be cut before it could count as slow.
        timeout, threshold = self.openrouter.first_token_timeout_s, self.ttft_threshold_s
        if timeout < threshold:
            raise ValueError(
                f"setting 'openrouter.first_token_timeout_s': {timeout:g} s is below "
                f"ttft_threshold_s ({threshold:g} s); a stream silent that long must count as slow"
            )
        # The client's first-token deadline is min(first_token_timeout_s, stream_timeout_s): a
        # shorter stream deadline would cut a stall before the threshold too.
        stream = self.openrouter.stream_timeout_s
        if stream < threshold:
            raise ValueError(
                f"setting 'openrouter.stream_timeout_s': {stream:g} s is below "
                f"ttft_threshold_s ({threshold:g} s); a stream silent that long must count as slow"
            )
        return self

    def model(self, model_id: str) -> ModelSettings:
        for m in self.models:
            if m.id == model_id:
                return m
        return ModelSettings(id=model_id)

    @property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)


def _redact_url(url: str) -> str:
    """Drop a password from a database URL before it is shown anywhere."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user, has_password, _ = creds.partition(":")
        return f"{scheme}://{user}:***@{host}" if has_password else url
    return url


def redact_url(url: str) -> str:
    return _redact_url(url)


_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "CANARY_DATABASE_URL": ("database_url",),
    "CANARY_MODE": ("mode",),
    "CANARY_INTERVAL_MINUTES": ("interval_minutes",),
    "CANARY_TTFT_THRESHOLD_S": ("ttft_threshold_s",),
    "CANARY_LANGUAGES": ("languages",),
    "CANARY_ADMIN_TOKEN": ("admin_token",),
    "CANARY_CONCURRENCY": ("concurrency",),
    "CANARY_DAILY_BUDGET_USD": ("daily_budget_usd",),
    "CANARY_LEASE_TTL_S": ("lease_ttl_s",),
    "CANARY_LEASE_RENEW_S": ("lease_renew_s",),
    "CANARY_LOG_FORMAT": ("log_format",),
    "CANARY_SHUTDOWN_GRACE_S": ("shutdown_grace_s",),
    "CANARY_STARTUP_WAIT_S": ("startup_wait_s",),
    "CANARY_RETENTION_DAYS": ("retention_days",),
    "CANARY_PROBES_DIR": ("probes_dir",),
    "CANARY_OPENROUTER_BASE_URL": ("openrouter", "base_url"),
    "OPENROUTER_API_KEY": ("openrouter", "api_key"),
    "CANARY_OPENROUTER_API_KEY": ("openrouter", "api_key"),
}
_LIST_KEYS = {"languages"}
# Secrets may come from a file instead (Docker and Kubernetes secrets): ``<NAME>_FILE``.
FILE_VARIANTS = ("OPENROUTER_API_KEY", "CANARY_ADMIN_TOKEN", "CANARY_DATABASE_URL")


def read_secret_file(path: Path, name: str) -> str:
    """The secret held in ``path`` (one trailing newline dropped); a SettingsError-worthy
    ValueError naming ``name`` and the path, never the content, when it cannot be read."""
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


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Put the environment's settings into ``data``; returns which variable set each path."""
    applied: dict[tuple[str, ...], str] = {}
    for var, path in _ENV_KEYS.items():
        value = env_value(env, var)
        if value is None:
            continue
        raw: Any = value
        if path[-1] in _LIST_KEYS:
            raw = [part.strip() for part in raw.split(",") if part.strip()]
        target = data
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = raw
        applied[path] = var
    if env.get("CANARY_MODELS"):
        listed = [m.strip() for m in env["CANARY_MODELS"].split(",") if m.strip()]
        by_id = {m.get("id"): m for m in data.get("models", []) if isinstance(m, dict)}
        data["models"] = [by_id.get(model_id, {"id": model_id}) for model_id in listed]
        applied[("models",)] = "CANARY_MODELS"
    return applied


def _source_of(
    error: ValidationError, file_source: str, applied: Mapping[tuple[str, ...], str]
) -> str:
    """Who gave the invalid value: the environment variable that set it, else the file."""
    loc = tuple(str(p) for p in error.errors()[0]["loc"])
    for path, var in applied.items():
        if loc[: len(path)] == path:
            return f"environment {var}"
    return file_source


def _describe(error: ValidationError, source: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "settings"
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown setting {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    if not first["loc"]:  # a rule across settings: its message names them
        return f"{source}: {message}"
    return f"{source}: setting {where!r}: {message}"


def with_changes(settings: Settings, source: str, **changes: Any) -> Settings:
    """``settings`` with ``changes``, validated again (rules across settings included)."""
    try:
        return Settings.model_validate({**dict(settings), **changes})
    except ValidationError as exc:
        raise SettingsError(_describe(exc, source)) from None


def load_settings(path: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Read the TOML file (if any) and the environment; raise SettingsError on anything invalid."""
    env = os.environ if env is None else env
    explicit = path is not None or bool(env.get("CANARY_CONFIG"))
    path = path or (Path(env["CANARY_CONFIG"]) if env.get("CANARY_CONFIG") else DEFAULT_CONFIG)
    data: dict[str, Any] = {}
    source = str(path)
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{source}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise SettingsError(f"{source}: cannot be read: {exc.strerror}") from None
    elif explicit:
        raise SettingsError(f"{source}: no such settings file")
    applied = _apply_env(data, env)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        file_source = source if path.exists() else "environment"
        raise SettingsError(_describe(exc, _source_of(exc, file_source, applied))) from None
