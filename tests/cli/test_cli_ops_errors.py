"""Store problems give one clear line, not a traceback."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cli_runner import CliRunner
from sqlite_template import migrated_sqlite

from canary.cli.main import app


def test_a_store_without_the_schema_says_to_run_db_upgrade(tmp_path: Path) -> None:
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "sqlite:///{(tmp_path / "empty.db").as_posix()}"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["--config", str(config), "quarantine", "list"], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert "canary db upgrade" in result.stderr and "Traceback" not in result.output


def test_status_with_no_model_anywhere_says_so(tmp_path: Path) -> None:
    from canary.store.repository import Store

    url = migrated_sqlite(tmp_path / "canary.db")
    store = Store(url)
    store.dispose()
    config = tmp_path / "canary.toml"
    config.write_text(f'database_url = "{url}"\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(config), "status"], catch_exceptions=False)
    assert result.exit_code == 2 and "no model is watched" in result.stderr


def test_before_the_first_round_any_provider_can_be_excluded_when_forced(tmp_path: Path) -> None:
    from canary.store.repository import Store

    url = migrated_sqlite(tmp_path / "canary.db")
    store = Store(url)
    config = tmp_path / "canary.toml"
    config.write_text(f'database_url = "{url}"\n[[models]]\nid = "acme/new"\n', encoding="utf-8")
    runner = CliRunner()
    args = ["--config", str(config), "exclude", "add", "--model", "acme/new"]
    result = runner.invoke(app, [*args, "--provider", "badhost", "--reason", "known bad"])
    assert result.exit_code == 4 and "not been listed yet" in result.stderr
    assert store.active_exclusions("acme/new", datetime.now(UTC)) == []
    forced = [*args, "--provider", "badhost", "--reason", "known bad", "--force"]
    result = runner.invoke(app, forced)
    assert result.exit_code == 0, result.output
    assert [e.tag for e in store.active_exclusions("acme/new", datetime.now(UTC))] == ["badhost"]
    store.dispose()


def test_an_unreachable_store_is_said_to_be_unreachable_not_unmigrated(tmp_path: Path) -> None:
    from canary.service.ports import free_port

    config = tmp_path / "canary.toml"
    url = f"postgresql+psycopg://canary:pw-secret@127.0.0.1:{free_port()}/canary"  # nothing there
    config.write_text(f'database_url = "{url}"\n[[models]]\nid = "acme/a"\n', encoding="utf-8")
    for command in (["status"], ["quarantine", "list"]):
        result = CliRunner().invoke(app, ["--config", str(config), *command])
        assert result.exit_code == 1, (command, result.output)
        (line,) = result.stderr.splitlines()
        assert "is unreachable" in line and "db upgrade" not in line, line
        assert "pw-secret" not in result.output
