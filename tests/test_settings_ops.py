"""The operations settings: shutdown grace, start-up wait, retention, secrets from files."""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.config.settings import SettingsError, load_settings


@pytest.fixture(autouse=True)
def _no_settings_file_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./canary.toml: the defaults and the environment only


def test_operations_settings_have_their_defaults() -> None:
    settings = load_settings(None, env={})
    assert (settings.shutdown_grace_s, settings.startup_wait_s, settings.retention_days) == (
        20,
        60,
        30,
    )


def test_operations_settings_come_from_the_environment() -> None:
    env = {
        "CANARY_SHUTDOWN_GRACE_S": "2.5",
        "CANARY_STARTUP_WAIT_S": "5",
        "CANARY_RETENTION_DAYS": "9",
    }
    settings = load_settings(None, env=env)
    assert (settings.shutdown_grace_s, settings.startup_wait_s, settings.retention_days) == (
        2.5,
        5,
        9,
    )


def test_retention_below_a_week_is_refused() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(None, env={"CANARY_RETENTION_DAYS": "6"})
    assert str(caught.value) == (
        "environment CANARY_RETENTION_DAYS: setting 'retention_days': should be at least 7, not 6"
    )


@pytest.mark.parametrize(
    ("variable", "read"),
    [
        ("OPENROUTER_API_KEY", lambda s: s.openrouter.api_key.get_secret_value()),
        ("CANARY_ADMIN_TOKEN", lambda s: s.admin_token.get_secret_value()),
        ("CANARY_DATABASE_URL", lambda s: s.database_url),
    ],
)
def test_a_secret_can_come_from_a_file(tmp_path: Path, variable: str, read: object) -> None:
    value = (
        "postgresql+psycopg://u:s3cret-value@db/canary"
        if "DATABASE" in variable
        else "s3cret-value"
    )
    secret = tmp_path / "secret"
    secret.write_text(value + "\n", encoding="utf-8")
    settings = load_settings(None, env={f"{variable}_FILE": str(secret)})
    assert read(settings) == value  # type: ignore[operator]


def test_an_unreadable_secret_file_is_one_line_that_never_shows_a_value(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(None, env={"CANARY_ADMIN_TOKEN_FILE": str(tmp_path / "missing")})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("environment: CANARY_ADMIN_TOKEN_FILE ")
    assert message.endswith("cannot be read: No such file or directory")


def test_a_variable_and_its_file_variant_together_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("from-file", encoding="utf-8")
    env = {"OPENROUTER_API_KEY": "from-env", "OPENROUTER_API_KEY_FILE": str(secret)}
    with pytest.raises(SettingsError) as caught:
        load_settings(None, env=env)
    assert "both OPENROUTER_API_KEY and OPENROUTER_API_KEY_FILE" in str(caught.value)
    assert "from-file" not in str(caught.value) and "from-env" not in str(caught.value)


def test_a_webhook_secret_comes_from_the_file_or_from_secret_file(tmp_path: Path) -> None:
    (tmp_path / "hook.key").write_text("hook-key-from-file\n", encoding="utf-8")
    config = tmp_path / "canary.toml"
    config.write_text(
        '[[webhooks]]\nurl = "http://a.example/x"\nsecret = "inline-hook-key"\n'
        f'[[webhooks]]\nurl = "http://b.example/y"\nsecret_file = "{tmp_path / "hook.key"}"\n'
        '[[webhooks]]\nurl = "http://c.example/z"\n',
        encoding="utf-8",
    )
    hooks = load_settings(config, env={}).webhooks
    assert [h.secret.get_secret_value() for h in hooks] == [
        "inline-hook-key",
        "hook-key-from-file",
        "",
    ]
    assert "hook-key" not in repr(hooks)


def test_a_missing_webhook_secret_file_stops_loading_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "canary.toml"
    config.write_text(
        f'[[webhooks]]\nurl = "http://a.example/x"\nsecret_file = "{tmp_path / "nope"}"\n',
        encoding="utf-8",
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(config, env={})
    message = str(caught.value)
    assert "\n" not in message
    assert "setting 'webhooks.0'" in message and "cannot be read" in message
