"""Whatever a settings file holds, reading it ends in settings or in readable lines, one per
problem; settings read back from what they hold unchanged; a secret never shows."""

from __future__ import annotations

import json
import math
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from quick import examples

from canary.config.settings import (
    SUPPORTED_LANGUAGES,
    ModelSettings,
    OpenRouterSettings,
    OtelSettings,
    Settings,
    SettingsError,
    Webhook,
    load_settings,
    with_changes,
)

FIELDS = [
    "database_url", "mode", "interval_minutes", "ttft_threshold_s", "ttft_samples", "languages",
    "admin_token", "concurrency", "retention_days", "probes_dir", "openrouter", "policy", "otel",
    "models", "webhooks", "daily_budget_usd", "colour",
]  # fmt: skip
TEXT = st.characters(exclude_categories=["Cs"])  # what a UTF-8 file can hold
scalars = st.one_of(
    st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(TEXT, max_size=12)
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(TEXT, max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
nested = st.fixed_dictionaries(
    {},
    optional={
        "models": st.lists(
            st.dictionaries(st.sampled_from(["id", "capacity_floor", "max_price", "x"]), values),
            max_size=2,
        ),
        "openrouter": st.dictionaries(
            st.sampled_from(["base_url", "api_key", "max_tokens", "stream_timeout_s", "y"]), values
        ),
    },
)


def _toml(value: Any) -> str:
    """``value`` as a TOML value (inline tables and arrays; JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        pairs = (f"{_toml(k)} = {_toml(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    # JSON's escapes of control characters are TOML's; TOML wants DEL escaped too
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _file(folder: Path, data: dict[str, Any]) -> Path:
    """A settings file holding ``data`` (a key whose value is None is left out, as TOML has no
    null)."""
    path = folder / "canary.toml"
    lines = [f"{_toml(k)} = {_toml(v)}" for k, v in data.items() if v is not None]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_settings_file_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(flat=st.dictionaries(st.sampled_from(FIELDS), values, max_size=4), deep=nested)
def test_any_file_gives_settings_or_one_line_per_problem(
    tmp_path: Path, flat: dict[str, Any], deep: dict[str, Any]
) -> None:
    """Never a TypeError or an AttributeError from inside the checks, never a traceback: the
    settings, or lines that each name the file and a setting (or a rule across settings)."""
    path = _file(tmp_path, {**flat, **deep})
    try:
        loaded = load_settings(path, env={})
    except SettingsError as exc:
        for line in str(exc).splitlines():
            assert line.startswith(f"{path}: "), line
            assert "setting " in line, line
        return
    assert isinstance(loaded.openrouter, OpenRouterSettings)
    assert all(isinstance(m, ModelSettings) for m in loaded.models)
    assert isinstance(loaded.concurrency, int) and loaded.concurrency >= 1
    assert isinstance(loaded.interval_minutes, float) and loaded.interval_minutes > 0


model_ids = st.tuples(
    st.text(string.ascii_lowercase, min_size=1, max_size=6),
    st.text(string.ascii_lowercase + "-.", min_size=1, max_size=8),
).map("/".join)
valid = st.builds(
    dict,
    mode=st.sampled_from(["observe", "enforce"]),
    interval_minutes=st.floats(1, 120),
    ttft_samples=st.integers(1, 9),
    languages=st.lists(st.sampled_from(SUPPORTED_LANGUAGES), min_size=1, max_size=4, unique=True),
    concurrency=st.integers(1, 512),
    retention_days=st.integers(7, 365),
    admin_token=st.text(string.ascii_letters, max_size=12),
    policy=st.builds(
        dict, failing_rounds=st.integers(1, 3), ladder_days=st.lists(st.floats(0.5, 30))
    ),
    models=st.lists(
        st.builds(
            dict,
            id=model_ids,
            capacity_floor=st.integers(0, 5),
            max_price=st.none() | st.builds(dict, prompt=st.floats(0, 50)),
            min_quantization=st.none() | st.sampled_from(["fp8", "int4", "bf16"]),
        ),
        max_size=3,
        unique_by=lambda m: m["id"],
    ),
)


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=valid)
def test_settings_read_back_from_what_they_hold_unchanged(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    loaded = load_settings(_file(tmp_path, data), env={})
    assert Settings.model_validate(loaded.model_dump()) == loaded
    assert with_changes(loaded, "test") == loaded
    held = loaded.model_dump(mode="json") | {"admin_token": loaded.admin_token.get_secret_value()}
    assert load_settings(_file(tmp_path, held), env={}) == loaded


def test_building_in_code_converts_as_reading_a_file_does(tmp_path: Path) -> None:
    built = Settings(
        concurrency="12",  # type: ignore[arg-type]
        otel={"endpoint": "http://collector:4318"},  # type: ignore[arg-type]
        models=[{"id": "acme/chat-1", "max_price": {"prompt": 1}}],  # type: ignore[list-item]
        admin_token="token",  # type: ignore[arg-type]
        probes_dir=str(tmp_path),  # type: ignore[arg-type]
    )
    assert built.concurrency == 12
    assert built.otel == OtelSettings(endpoint="http://collector:4318")
    assert built.models[0].max_price is not None and built.models[0].max_price.prompt == 1.0
    assert built.admin_token == SecretStr("token")
    assert built.probes_dir == tmp_path


def test_settings_built_in_code_never_read_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only load_settings brings the environment in: settings a test or a drill builds are
    what it says, whatever the shell around it holds."""
    monkeypatch.setenv("CANARY_MODE", "enforce")
    monkeypatch.setenv("OPENROUTER_API_KEY", "from-the-shell")
    built = Settings()
    assert built.mode == "observe" and built.openrouter.api_key.get_secret_value() == ""
    loaded = load_settings()
    assert loaded.mode == "enforce"
    assert loaded.openrouter.api_key.get_secret_value() == "from-the-shell"


secrets = st.text(string.ascii_letters, min_size=12, max_size=16)
NUMBER_SECRET = 31415926535


@settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(secret=secrets)
def test_a_secret_is_never_shown_not_even_when_something_is_wrong(
    tmp_path: Path, secret: str
) -> None:
    hook = Webhook(url=f"https://hooks.example/{secret}", secret=SecretStr(secret))
    loaded = Settings(
        admin_token=SecretStr(secret),
        database_url=f"postgresql+psycopg://canary:{secret}@db/canary",
        openrouter=OpenRouterSettings(api_key=SecretStr(secret)),
        webhooks=(hook,),
    )
    shown = repr(loaded) + str(loaded) + repr(loaded.model_dump(mode="json")["openrouter"])
    assert secret not in shown
    assert loaded.webhooks[0].secret.get_secret_value() == secret
    wrong = {
        "admin_token": NUMBER_SECRET,  # a secret of the wrong type
        "database_url": f"mysql://canary:{secret}@db/canary",
        "mode": "loud",
        "openrouter": {"api_key": secret, "max_tokens": 1},
    }
    with pytest.raises(SettingsError) as caught:
        load_settings(_file(tmp_path, wrong), env={})
    message = str(caught.value)
    assert len(message.splitlines()) == 4, message
    assert secret not in message and str(NUMBER_SECRET) not in message
