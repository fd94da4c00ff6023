"""Settings: a TOML file (``--config PATH`` or ``./canary.toml``) overridden by ``CANARY_*`` variables.

Invalid settings raise :class:`SettingsError` whose message is one readable line naming the setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from canary.bundled import bundled_dir
from canary.checked import Bound, Check, FieldError, Record, Secret, plain

if TYPE_CHECKING:
    from canary.core.controls import Controls

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


def _model_id(value: str) -> str:
    author, _, slug = value.partition("/")
    if not author or not slug or "/" in slug:
        raise ValueError(f"{value!r} is not of the form author/slug")
    return value


def _tags(value: tuple[str, ...]) -> tuple[str, ...]:
    from canary.core.identity import check_tag

    return tuple(check_tag(tag) for tag in value)


def _quantization(value: str | None) -> str | None:
    if value is not None and value not in QUANTIZATION_ORDER:
        raise ValueError(f"{value!r} is not one of {', '.join(QUANTIZATION_ORDER)}")
    return value


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


def _base_url(value: str) -> str:
    return str(_http_url(value)).rstrip("/")


def _languages(value: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [lang for lang in value if lang not in SUPPORTED_LANGUAGES]
    if unknown:
        raise ValueError(
            f"unsupported {', '.join(unknown)} (supported: {', '.join(SUPPORTED_LANGUAGES)})"
        )
    if not value:
        raise ValueError("at least one language is needed")
    return value


def _database_url(value: str) -> str:
    if not value.startswith(("sqlite", "postgresql")):
        raise ValueError(f"{_redact_url(value)!r} is neither sqlite:/// nor postgresql+psycopg://")
    return value


Positive = Bound(gt=0)
NotNegative = Bound(ge=0)


@dataclass(frozen=True, kw_only=True)
class MaxPrice(Record):
    """USD per million tokens."""

    prompt: Annotated[float, NotNegative] | None = None
    completion: Annotated[float, NotNegative] | None = None


@dataclass(frozen=True, kw_only=True)
class ModelSettings(Record):
    id: Annotated[str, Check(_model_id)]
    positive_controls: Annotated[tuple[str, ...], Check(_tags)] = ()  # endpoint tags (slugs)
    capacity_floor: Annotated[int, NotNegative] = 2
    # the controls are published as excluded (layer control) unless this is false
    publish_controls: bool = True
    max_price: MaxPrice | None = None
    min_quantization: Annotated[str | None, Check(_quantization)] = None

    @property
    def controls(self) -> Controls:
        """The positive controls as the published list holds them (never usable capacity)."""
        from canary.core.controls import Controls

        return Controls.of(self.positive_controls, self.publish_controls)


@dataclass(frozen=True, kw_only=True)
class OpenRouterSettings(Record):
    base_url: Annotated[str, Check(_base_url)] = "https://openrouter.ai/api/v1"
    api_key: Secret = Secret("")
    connect_timeout_s: Annotated[float, Positive] = 5.0
    first_token_timeout_s: Annotated[float, Positive] = 30.0
    stream_timeout_s: Annotated[float, Positive] = 60.0
    listing_deadline_s: Annotated[float, Positive] = 30.0
    max_tokens: Annotated[int, Bound(ge=16)] = 400


@dataclass(frozen=True, kw_only=True)
class Webhook(Record):
    """A receiver of notifications. With a ``secret`` (or ``secret_file``, read at load), each
    delivery is signed with HMAC-SHA256 (see :mod:`canary.notify`); without one, unsigned."""

    url: str
    format: Literal["json", "slack"] = "json"
    secret: Secret = Secret("")
    secret_file: Path | None = None

    @classmethod
    def prepare(cls, data: Mapping[str, Any]) -> Mapping[str, Any]:
        if data.get("secret_file") in (None, ""):
            return data
        if data.get("secret"):
            raise ValueError("set secret or secret_file, not both")
        return {**data, "secret": read_secret_file(Path(data["secret_file"]), "secret_file")}


@dataclass(frozen=True, kw_only=True)
class OtelSettings(Record):
    """OpenTelemetry traces of rounds (needs ``pip install canary[otel]``); off by default."""

    # OTLP over HTTP, e.g. "http://collector:4318" (+ /v1/traces)
    endpoint: Annotated[str | None, Check(_http_url)] = None
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else "canary"
    # how long a stop waits for the collector to take the queued spans before dropping them
    shutdown_timeout_s: Annotated[float, Positive] = 5.0


@dataclass(frozen=True, kw_only=True)
class Policy(Record):
    """The quarantine rules' numbers. Their hash is the policy version recorded with decisions."""

    failing_rounds: Annotated[int, Bound(ge=1)] = 2
    recovery_rounds: Annotated[int, Bound(ge=1)] = 2
    ladder_days: tuple[float, ...] = (1.0, 3.0, 7.0)
    ladder_reset_days: Annotated[float, Positive] = 14.0
    # "most endpoints": more than this share
    model_wide_share: Annotated[float, Bound(gt=0, le=1)] = 0.5
    # a contract's fail older than this starts its count again (hours)
    streak_max_age_hours: Annotated[float, Positive] = 6.0
    # a look counts only when its round started at least this long after the previous counted
    # one (minutes); None: the smaller of 10 and half of interval_minutes
    min_look_gap_minutes: Annotated[float, NotNegative] | None = None


@dataclass(frozen=True, kw_only=True)
class Settings(Record):
    database_url: Annotated[str, Check(_database_url)] = "sqlite:///canary.db"
    mode: Literal["observe", "enforce"] = "observe"
    interval_minutes: Annotated[float, Positive] = 30.0
    ttft_threshold_s: Annotated[float, Positive] = 10.0
    ttft_samples: Annotated[int, Bound(ge=1)] = 3
    languages: Annotated[tuple[str, ...], Check(_languages)] = SUPPORTED_LANGUAGES
    admin_token: Secret = Secret("")
    concurrency: Annotated[int, Bound(ge=1)] = 32
    per_provider_concurrency: Annotated[int, Bound(ge=1)] = 4
    daily_budget_usd: Annotated[float, Positive] | None = None
    latency_degraded_p95_s: Annotated[float, Positive] = 5.0
    # a round lease not renewed for this long is dead
    lease_ttl_s: Annotated[float, Positive] = 90.0
    lease_renew_s: Annotated[float, Positive] = 30.0  # renewed this often while a round runs
    log_format: Literal["auto", "console", "json"] = "auto"
    # a running round's time to finish on stop
    shutdown_grace_s: Annotated[float, NotNegative] = 20.0
    startup_wait_s: Annotated[float, NotNegative] = 60.0  # how long start-up retries the store
    # probes and other evidence older are pruned
    retention_days: Annotated[int, Bound(ge=7)] = 30
    probes_dir: Path = bundled_dir("probes")  # the copy installed with the package
    openrouter: OpenRouterSettings = OpenRouterSettings()
    policy: Policy = Policy()
    otel: OtelSettings = OtelSettings()
    models: tuple[ModelSettings, ...] = ()
    webhooks: tuple[Webhook, ...] = ()

    def check(self) -> None:
        self._streak_age_spans_the_failing_rounds()
        self._stall_is_slowness()
        self._look_gap_within_the_interval()

    @property
    def min_look_gap_minutes(self) -> float:
        """The look gap in force: the setting, else the smaller of 10 minutes and half the
        interval."""
        from canary.core.policy import default_look_gap_minutes

        gap = self.policy.min_look_gap_minutes
        return default_look_gap_minutes(self.interval_minutes) if gap is None else gap

    def _look_gap_within_the_interval(self) -> None:
        # Rounds on schedule are one interval apart: a longer gap would count none of them.
        gap = self.policy.min_look_gap_minutes
        if gap is not None and gap > self.interval_minutes:
            raise FieldError(
                ("policy", "min_look_gap_minutes"),
                f"{gap:g} min is longer than interval_minutes ({self.interval_minutes:g} min); "
                "rounds on schedule would never count",
            )

    def _streak_age_spans_the_failing_rounds(self) -> None:
        needed = self.policy.failing_rounds * self.interval_minutes / 60
        if self.policy.streak_max_age_hours < needed:
            raise ValueError(
                f"policy.streak_max_age_hours = {self.policy.streak_max_age_hours:g} is shorter "
                f"than failing_rounds x interval_minutes ({needed:g} h): no streak could reach "
                "the threshold"
            )

    def _stall_is_slowness(self) -> None:
        # A stream silent for first_token_timeout_s counts as one slow ttft sample: the wait
        # must reach the threshold, or a stall would be cut before it could count as slow.
        timeout, threshold = self.openrouter.first_token_timeout_s, self.ttft_threshold_s
        if timeout < threshold:
            raise FieldError(
                ("openrouter", "first_token_timeout_s"),
                f"{timeout:g} s is below ttft_threshold_s ({threshold:g} s); a stream silent "
                "that long must count as slow",
            )
        # The client's first-token deadline is min(first_token_timeout_s, stream_timeout_s): a
        # shorter stream deadline would cut a stall before the threshold too.
        stream = self.openrouter.stream_timeout_s
        if stream < threshold:
            raise FieldError(
                ("openrouter", "stream_timeout_s"),
                f"{stream:g} s is below ttft_threshold_s ({threshold:g} s); a stream silent "
                "that long must count as slow",
            )

    def model(self, model_id: str) -> ModelSettings:
        for m in self.models:
            if m.id == model_id:
                return m
        return ModelSettings(id=model_id)

    @property
    def model_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.models)

    @property
    def model_controls(self) -> dict[str, Controls]:
        """Each watched model's positive controls, as the published list holds them."""
        return {m.id: m.controls for m in self.models}


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


def _source_of(error: FieldError, file_source: str, applied: Mapping[tuple[str, ...], str]) -> str:
    """Who gave the invalid value: the environment variable that set it, else the file."""
    loc = tuple(str(p) for p in error.loc)
    for path, var in applied.items():
        if loc[: len(path)] == path:
            return f"environment {var}"
    return file_source


def _describe(error: FieldError, source: str) -> str:
    if error.kind == "unknown":
        return f"{source}: unknown setting {error.where!r}"
    if error.kind == "missing":
        return f"{source}: setting {error.where!r} is required"
    if not error.loc:  # a rule across settings: its message names them
        return f"{source}: {error.message}"
    return f"{source}: setting {error.where!r}: {error.message}"


def with_changes(settings: Settings, source: str, **changes: Any) -> Settings:
    """``settings`` with ``changes``, validated again (rules across settings included)."""
    try:
        return settings.replace(**changes)
    except FieldError as exc:
        raise SettingsError(_describe(exc, source)) from None


def as_plain(record: Record) -> dict[str, Any]:
    """A settings record as JSON would hold it (a secret as stars)."""
    plain_record: dict[str, Any] = plain(record)
    return plain_record


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
        return Settings.of(data)
    except FieldError as exc:
        file_source = source if path.exists() else "environment"
        raise SettingsError(_describe(exc, _source_of(exc, file_source, applied))) from None
