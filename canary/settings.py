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
    positive_controls: tuple[str, ...] = ()
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
    url: str
    format: Literal["json", "slack"] = "json"


class Policy(_Strict):
    """The quarantine rules' numbers. Their hash is the policy version recorded with decisions."""

    failing_rounds: int = Field(default=2, ge=1)
    recovery_rounds: int = Field(default=2, ge=1)
    ladder_days: tuple[float, ...] = (1, 3, 7)
    ladder_reset_days: float = Field(default=14, gt=0)
    model_wide_share: float = Field(default=0.5, gt=0, le=1)  # "most endpoints": more than this


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
    probes_dir: Path = PROJECT_ROOT / "probes"
    openrouter: OpenRouterSettings = OpenRouterSettings()
    policy: Policy = Policy()
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
    def _stall_is_slowness(self) -> Settings:
        # A stream silent for first_token_timeout_s counts as one slow ttft sample: the wait
        # must reach the threshold, or a stall would be cut before it could count as slow.
        timeout, threshold = self.openrouter.first_token_timeout_s, self.ttft_threshold_s
        if timeout < threshold:
            raise ValueError(
                f"setting 'openrouter.first_token_timeout_s': {timeout:g} s is below "
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
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
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
    "CANARY_PROBES_DIR": ("probes_dir",),
    "CANARY_OPENROUTER_BASE_URL": ("openrouter", "base_url"),
    "OPENROUTER_API_KEY": ("openrouter", "api_key"),
    "CANARY_OPENROUTER_API_KEY": ("openrouter", "api_key"),
}
_LIST_KEYS = {"languages"}


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> None:
    for var, path in _ENV_KEYS.items():
        if var not in env or env[var] == "":
            continue
        raw: Any = env[var]
        if path[-1] in _LIST_KEYS:
            raw = [part.strip() for part in raw.split(",") if part.strip()]
        target = data
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = raw
    if env.get("CANARY_MODELS"):
        listed = [m.strip() for m in env["CANARY_MODELS"].split(",") if m.strip()]
        by_id = {m.get("id"): m for m in data.get("models", []) if isinstance(m, dict)}
        data["models"] = [by_id.get(model_id, {"id": model_id}) for model_id in listed]


def _describe(error: ValidationError, source: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "settings"
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown setting {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    if not first["loc"]:  # a rule across settings names them itself
        return f"{source}: {message}"
    return f"{source}: setting {where!r}: {message}"


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
    _apply_env(data, env)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_describe(exc, source if path.exists() else "environment")) from None
