from __future__ import annotations

from pathlib import Path

import pytest

from canary.config.settings import SUPPORTED_LANGUAGES, SettingsError, load_settings

CONTRACT_FILE = """
database_url = "sqlite:///canary.db"
mode = "observe"
interval_minutes = 30
ttft_threshold_s = 10
languages = ["en", "es", "pt", "fr", "de", "it", "pl", "ru", "uk", "tr", "ar", "id", "vi", "th", "ja", "ko", "zh"]
admin_token = ""
[openrouter]
base_url = "https://openrouter.ai/api/v1"
[[models]]
id = "acme/roleplay-1"
positive_controls = ["some-filtering-host"]
capacity_floor = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "canary.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_documented_file_shape_loads(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, CONTRACT_FILE), env={})
    assert settings.mode == "observe"
    assert settings.languages == SUPPORTED_LANGUAGES
    assert settings.models[0].id == "acme/roleplay-1"
    assert settings.models[0].positive_controls == ("some-filtering-host",)
    assert settings.models[0].capacity_floor == 2
    assert settings.openrouter.base_url == "https://openrouter.ai/api/v1"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    env = {
        "CANARY_MODE": "enforce",
        "CANARY_TTFT_THRESHOLD_S": "7.5",
        "CANARY_LANGUAGES": "pt, es",
        "CANARY_OPENROUTER_BASE_URL": "http://127.0.0.1:8089/api/v1/",
        "CANARY_DATABASE_URL": "postgresql+psycopg://u:pw@db/canary",
        "OPENROUTER_API_KEY": "sk-or-secret",
        "CANARY_ADMIN_TOKEN": "admintoken",
    }
    settings = load_settings(write(tmp_path, CONTRACT_FILE), env=env)
    assert settings.mode == "enforce"
    assert settings.ttft_threshold_s == 7.5
    assert settings.languages == ("pt", "es")
    assert settings.openrouter.base_url == "http://127.0.0.1:8089/api/v1"
    assert settings.openrouter.api_key.get_secret_value() == "sk-or-secret"
    assert settings.admin_token.get_secret_value() == "admintoken"
    assert "sk-or-secret" not in repr(settings)


def test_models_from_the_environment_keep_file_details(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, CONTRACT_FILE), env={"CANARY_MODELS": "acme/roleplay-1,b/two"}
    )
    assert settings.model_ids == ("acme/roleplay-1", "b/two")
    assert settings.models[0].positive_controls == ("some-filtering-host",)
    assert settings.models[1].capacity_floor == 2


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ('mode = "loud"', {}, "'mode'"),
        ("interval_minutes = -1", {}, "'interval_minutes'"),
        ('languages = ["en", "xx"]', {}, "setting 'languages.1': should be one of 'en', 'es'"),
        ('colour = "red"', {}, "unknown setting 'colour'"),
        ('[[models]]\nid = "no-slash"', {}, "'models.0.id'"),
        ("", {"CANARY_TTFT_THRESHOLD_S": "soon"}, "'ttft_threshold_s'"),
        ('database_url = "mysql://x"', {}, "'database_url'"),
        ("mode = ", {}, "not valid TOML"),
    ],
)
def test_invalid_settings_give_one_readable_line(
    tmp_path: Path, text: str, env: dict[str, str], expected: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, text), env=env)
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


def test_a_first_token_timeout_below_the_ttft_threshold_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stall is one slow ttft sample: the client must wait at least the threshold for it."""
    text = "ttft_threshold_s = 10\n[openrouter]\nfirst_token_timeout_s = 8\n"
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, text), env={})
    assert str(caught.value) == (
        f"{tmp_path / 'canary.toml'}: setting 'openrouter.first_token_timeout_s': 8 s is below "
        "ttft_threshold_s (10 s); a stream silent that long must count as slow"
    )
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # no ./canary.toml: the environment alone
    with pytest.raises(SettingsError) as caught:
        load_settings(env={"CANARY_TTFT_THRESHOLD_S": "40"})
    assert str(caught.value).startswith("environment: setting 'openrouter.first_token_timeout_s'")
    equal = "ttft_threshold_s = 10\n[openrouter]\nfirst_token_timeout_s = 10\n"
    assert load_settings(write(tmp_path, equal), env={}).openrouter.first_token_timeout_s == 10


def test_a_stream_timeout_below_the_ttft_threshold_is_refused(tmp_path: Path) -> None:
    """The client waits min(first_token_timeout_s, stream_timeout_s) for the first token: a
    stream deadline under the threshold would cut a stall before it could count as slow."""
    text = "ttft_threshold_s = 10\n[openrouter]\nfirst_token_timeout_s = 30\nstream_timeout_s = 8\n"
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, text), env={})
    assert str(caught.value) == (
        f"{tmp_path / 'canary.toml'}: setting 'openrouter.stream_timeout_s': 8 s is below "
        "ttft_threshold_s (10 s); a stream silent that long must count as slow"
    )
    equal = (
        "ttft_threshold_s = 10\n[openrouter]\nfirst_token_timeout_s = 10\nstream_timeout_s = 10\n"
    )
    loaded = load_settings(write(tmp_path, equal), env={}).openrouter
    assert (loaded.first_token_timeout_s, loaded.stream_timeout_s) == (10, 10)


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="no such settings file"):
        load_settings(tmp_path / "absent.toml", env={})


def test_database_password_never_shown_in_errors(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, 'database_url = "mysql://u:hunter2@h/db"'), env={})
    assert "hunter2" not in str(caught.value)


def test_a_database_url_is_shown_without_its_password_and_unchanged_without_one() -> None:
    from canary.config.settings import redact_url

    assert redact_url("postgresql+psycopg://canary:s3cret@db:5432/c") == (
        "postgresql+psycopg://canary:***@db:5432/c"
    )
    assert redact_url("postgresql+psycopg://postgres@db/c") == "postgresql+psycopg://postgres@db/c"
    assert redact_url("sqlite:///data/canary.db") == "sqlite:///data/canary.db"


def test_a_streak_max_age_shorter_than_the_failing_rounds_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingsError) as caught:
        load_settings(env={"CANARY_INTERVAL_MINUTES": "240"})
    assert str(caught.value) == (
        "environment: setting 'policy.streak_max_age_hours': 6 h is shorter than failing_rounds "
        "x interval_minutes (8 h): no streak could reach the threshold"
    )


def test_a_bad_value_from_the_environment_is_blamed_on_its_variable(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('mode = "observe"\n', encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(config, env={"CANARY_SHUTDOWN_GRACE_S": "abc"})
    assert str(caught.value).startswith(
        "environment CANARY_SHUTDOWN_GRACE_S: setting 'shutdown_grace_s'"
    )
    config.write_text('shutdown_grace_s = "abc"\n', encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(config, env={})
    assert str(caught.value).startswith(f"{config}: setting 'shutdown_grace_s'")


def test_a_look_gap_longer_than_the_interval_is_refused_in_one_line(tmp_path: Path) -> None:
    """Rounds on schedule are one interval apart: a longer gap would count none of them."""
    text = "interval_minutes = 30\n[policy]\nmin_look_gap_minutes = 45\n"
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, text), env={})
    assert str(caught.value) == (
        f"{tmp_path / 'canary.toml'}: setting 'policy.min_look_gap_minutes': 45 min is longer "
        "than interval_minutes (30 min); rounds on schedule would never count"
    )
    equal = load_settings(write(tmp_path, text.replace("45", "30")), env={})
    assert equal.min_look_gap_minutes == 30


@pytest.mark.parametrize(("interval", "gap"), [("30", 10.0), ("12", 6.0), ("0.5", 0.25)])
def test_the_look_gap_defaults_to_ten_minutes_or_half_an_accelerated_interval(
    interval: str, gap: float
) -> None:
    loaded = load_settings(env={"CANARY_INTERVAL_MINUTES": interval})
    assert loaded.policy.min_look_gap_minutes is None and loaded.min_look_gap_minutes == gap


def test_a_model_may_keep_its_controls_off_the_list(tmp_path: Path) -> None:
    text = (
        '[[models]]\nid = "acme/a"\npositive_controls = ["ctl"]\npublish_controls = false\n'
        '[[models]]\nid = "acme/b"\npositive_controls = ["ctl"]\n'
    )
    loaded = load_settings(write(tmp_path, text), env={})
    hidden, shown = loaded.model("acme/a").controls, loaded.model("acme/b").controls
    assert (hidden.tags, hidden.published) == (frozenset({"ctl"}), False)
    assert (shown.tags, shown.published) == (frozenset({"ctl"}), True)
    with pytest.raises(SettingsError, match="publish_controls"):
        load_settings(
            write(tmp_path, '[[models]]\nid = "acme/a"\npublish_controls = "no"\n'), env={}
        )


def test_the_readme_example_is_the_line_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, 'mode = "loud"\n')
    with pytest.raises(SettingsError) as caught:
        load_settings(env={})
    assert str(caught.value) == (
        "canary.toml: setting 'mode': should be one of 'observe', 'enforce', not 'loud'"
    )


def test_every_problem_is_a_line_of_its_own_naming_where_it_came_from(tmp_path: Path) -> None:
    text = (
        'colour = "red"\nretention_days = 6\n[openrouter]\nmax_tokens = 3\n'
        "[[models]]\ncapacity_floor = 1\n"
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, text), env={"CANARY_CONCURRENCY": "0"})
    source = str(tmp_path / "canary.toml")
    assert str(caught.value).splitlines() == [
        "environment CANARY_CONCURRENCY: setting 'concurrency': should be at least 1, not 0",
        f"{source}: setting 'retention_days': should be at least 7, not 6",
        f"{source}: setting 'openrouter.max_tokens': should be at least 16, not 3",
        f"{source}: setting 'models.0.id' is required",
        f"{source}: unknown setting 'colour'",
    ]


def test_any_setting_of_a_table_can_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "CANARY_PER_PROVIDER_CONCURRENCY": "2",
        "CANARY_POLICY_FAILING_ROUNDS": "3",
        "CANARY_OPENROUTER_MAX_TOKENS": "256",
        "CANARY_OTEL": '{"endpoint": "http://collector:4318"}',
        "CANARY_OPENROUTER_API_KEY": "canary-key",
        "OPENROUTER_API_KEY": "plain-key",
    }
    loaded = load_settings(write(tmp_path, "[policy]\nrecovery_rounds = 4\n"), env=env)
    assert loaded.per_provider_concurrency == 2
    assert (loaded.policy.failing_rounds, loaded.policy.recovery_rounds) == (3, 4)
    assert loaded.openrouter.max_tokens == 256
    assert loaded.otel.endpoint == "http://collector:4318"
    assert loaded.openrouter.api_key.get_secret_value() == "canary-key"  # the prefixed one wins
    with pytest.raises(SettingsError) as caught:
        load_settings(write(tmp_path, ""), env={"CANARY_POLICY": "{failing_rounds: 3}"})
    assert str(caught.value).startswith('environment: error parsing value for field "policy"')


def test_the_openrouter_proxy_comes_from_the_file_or_the_environment(tmp_path: Path) -> None:
    assert (
        load_settings(write(tmp_path, CONTRACT_FILE), env={}).openrouter.proxy.get_secret_value()
        == ""
    )
    text = CONTRACT_FILE.replace(
        "[openrouter]\n", '[openrouter]\nproxy = "http://u:pw@10.0.0.2:3128"\n'
    )
    settings = load_settings(write(tmp_path, text), env={})
    assert settings.openrouter.proxy.get_secret_value() == "http://u:pw@10.0.0.2:3128"
    assert "pw@" not in repr(settings)  # it may hold a password: shown as stars
    env = {"CANARY_OPENROUTER_PROXY": "https://proxy.internal:8443"}
    settings = load_settings(write(tmp_path, text), env=env)
    assert settings.openrouter.proxy.get_secret_value() == "https://proxy.internal:8443"


def test_a_proxy_that_is_not_an_http_url_is_refused_without_echoing_it(tmp_path: Path) -> None:
    text = CONTRACT_FILE.replace("[openrouter]\n", '[openrouter]\nproxy = "ftp://u:pw@x"\n')
    with pytest.raises(SettingsError, match="openrouter.proxy") as raised:
        load_settings(write(tmp_path, text), env={})
    assert "pw" not in str(raised.value)
