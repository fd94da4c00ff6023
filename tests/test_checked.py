"""Settings records check and convert every field when they are built, however they are built
(a TOML file, the environment, a keyword in code), and any bad input is one FieldError."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canary.checked import FieldError, Secret, plain
from canary.settings import (
    SUPPORTED_LANGUAGES,
    ModelSettings,
    OpenRouterSettings,
    OtelSettings,
    Settings,
    SettingsError,
    Webhook,
    as_plain,
    with_changes,
)

FIELDS = [
    "database_url", "mode", "interval_minutes", "ttft_threshold_s", "ttft_samples", "languages",
    "admin_token", "concurrency", "retention_days", "probes_dir", "openrouter", "policy", "otel",
    "models", "webhooks", "daily_budget_usd", "colour",
]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
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


@settings(max_examples=300, deadline=None)
@given(flat=st.dictionaries(st.sampled_from(FIELDS), values, max_size=4), deep=nested)
def test_any_input_gives_settings_or_one_field_error(
    flat: dict[str, Any], deep: dict[str, Any]
) -> None:
    """Whatever a file holds, reading it ends in settings or in one readable FieldError: never
    a TypeError or an AttributeError from inside the checks."""
    try:
        loaded = Settings.of({**flat, **deep})
    except FieldError as exc:
        assert "\n" not in str(exc)
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
    policy=st.builds(
        dict, failing_rounds=st.integers(1, 3), ladder_days=st.lists(st.floats(0.5, 30))
    ),
    models=st.lists(
        st.builds(dict, id=model_ids, capacity_floor=st.integers(0, 5)),
        max_size=3,
        unique_by=lambda m: m["id"],
    ),
)


@settings(max_examples=200, deadline=None)
@given(data=valid)
def test_settings_read_back_from_their_plain_form_unchanged(data: dict[str, Any]) -> None:
    loaded = Settings.of(data)
    assert Settings.of(as_plain(loaded)) == loaded
    assert with_changes(loaded, "test") == loaded


def test_building_in_code_converts_as_reading_a_file_does(tmp_path: Path) -> None:
    built = Settings(
        concurrency="12",  # type: ignore[arg-type]
        otel={"endpoint": "http://collector:4318"},  # type: ignore[arg-type]
        models=[{"id": "acme/chat-1", "max_price": {"prompt": 1}}],  # type: ignore[arg-type]
        admin_token="token",  # type: ignore[arg-type]
        probes_dir=str(tmp_path),  # type: ignore[arg-type]
    )
    assert built.concurrency == 12
    assert built.otel == OtelSettings(endpoint="http://collector:4318")
    assert built.models[0].max_price is not None and built.models[0].max_price.prompt == 1.0
    assert built.admin_token == Secret("token")
    assert built.probes_dir == tmp_path
    assert Settings.of(plain(built) | {"admin_token": "token"}) == built


@pytest.mark.parametrize(
    ("changes", "where", "message"),
    [
        ({"concurrency": True}, ("concurrency",), "should be an integer, not True"),
        ({"concurrency": 0}, ("concurrency",), "should be at least 1, not 0"),
        (
            {"policy": {"model_wide_share": 1.5}},
            ("policy", "model_wide_share"),
            "should be at most 1",
        ),
        ({"models": [{"id": "a/b"}, {"id": "x"}]}, ("models", 1, "id"), "'x' is not of the form"),
        ({"languages": "en"}, ("languages",), "should be a list, not 'en'"),
        ({"interval_minutes": float("nan")}, ("interval_minutes",), "should be a finite number"),
        (
            {"webhooks": [{"url": "u", "format": "xml"}]},
            ("webhooks", 0, "format"),
            "one of 'json', 'slack'",
        ),
    ],
)
def test_a_bad_field_is_named_by_where_it_is(
    changes: dict[str, Any], where: tuple[str | int, ...], message: str
) -> None:
    with pytest.raises(FieldError) as caught:
        Settings(**changes)
    assert caught.value.loc == where
    assert message in caught.value.message


def test_unknown_and_missing_keys_are_refused_by_name() -> None:
    with pytest.raises(FieldError) as caught:
        Settings.of({"openrouter": {"base_url": "http://x", "colour": "red"}})
    assert (caught.value.kind, caught.value.loc) == ("unknown", ("openrouter", "colour"))
    with pytest.raises(FieldError) as caught:
        Settings.of({"models": [{"capacity_floor": 1}]})
    assert (caught.value.kind, caught.value.loc) == ("missing", ("models", 0, "id"))


def test_a_secret_is_never_shown_not_even_when_it_is_wrong() -> None:
    hook = Webhook(url="http://h", secret="hunter2-hook")  # type: ignore[arg-type]
    loaded = Settings(admin_token="hunter2-admin", webhooks=(hook,))  # type: ignore[arg-type]
    shown = repr(loaded) + str(loaded) + str(as_plain(loaded))
    assert "hunter2" not in shown
    assert loaded.webhooks[0].secret.get_secret_value() == "hunter2-hook"
    with pytest.raises(FieldError) as caught:
        Settings(admin_token=12345678)  # type: ignore[arg-type]
    assert "12345678" not in str(caught.value)


def test_a_rule_across_fields_holds_for_changes_too() -> None:
    base = Settings()
    with pytest.raises(SettingsError, match="streak_max_age_hours = 6 is shorter"):
        with_changes(base, "test", interval_minutes=240)
    with pytest.raises(SettingsError, match="'policy.failing_rounds': should be at least 1"):
        with_changes(base, "test", policy={"failing_rounds": 0})
