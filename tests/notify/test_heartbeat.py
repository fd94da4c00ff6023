"""The dead-man's switch: `[heartbeat] url` hears each slot's run, `/fail` appended when the round
was not done, and the URL (the check's secret) is never shown."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import CliRunner
from notify_receiver import Receiver
from sqlite_template import migrated_sqlite

from canary.cli.main import app
from canary.config.settings import SettingsError, load_settings
from canary.core.heartbeat import heartbeat_signal, heartbeat_url
from canary.core.plan import slot_of
from canary.core.probing import Stopped
from canary.service.ports import free_port
from canary.store.repository import Store

CHECK = "/ping/5f3c-check-secret"


@dataclass(frozen=True)
class End:
    model: str
    status: str
    error: str | None = None
    stopped: Stopped | None = None


def test_the_signal_is_what_makes_canary_round_exit_0_or_1() -> None:
    done = End("a", "finished")
    elsewhere = End("b", "claimed_elsewhere")
    assert heartbeat_signal(True, [done, elsewhere]) == "success"
    assert heartbeat_signal(True, [done, End("c", "abandoned")]) == "fail"
    assert heartbeat_signal(True, [End("d", "finished", error="notify failed")]) == "fail"
    assert heartbeat_signal(False, []) is None  # another replica held the lease: nothing to say
    assert heartbeat_signal(True, [], raised=True) == "fail"
    assert heartbeat_url("https://hc-ping.com/abc/", "fail") == "https://hc-ping.com/abc/fail"
    assert heartbeat_url("https://hc-ping.com/abc", "success") == "https://hc-ping.com/abc"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver()
    hook.thread.start()
    yield hook
    hook.server.shutdown()


def _round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, heartbeat: str
) -> tuple[int, str]:
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{url}"\n'
        f'[openrouter]\nbase_url = "http://127.0.0.1:{free_port()}/api/v1"\n'
        "connect_timeout_s = 0.2\nlisting_deadline_s = 0.3\n"
        f"[heartbeat]\n{heartbeat}\n"
        f'[[models]]\nid = "{model}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-heartbeat")
    result = CliRunner().invoke(app, ["--config", str(config), "round"], catch_exceptions=False)
    return result.exit_code, result.output


def test_a_round_that_ran_elsewhere_pings_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    model = "acme/hb-elsewhere"
    with Store(migrated_sqlite(tmp_path / "canary.db")) as store:
        slot = slot_of(datetime.now(UTC), 30)
        for at in (slot, slot + timedelta(minutes=30)):  # the run may start in either
            rid = store.claim_round(model, at, "other:1", "p", {}, started_at=at)
            assert rid is not None
            store.finish_round(rid, "finished", at=at)
    code, output = _round(tmp_path, monkeypatch, model, f'url = "{receiver.url}{CHECK}"')
    assert code == 0, output
    assert [path for path, _, _ in receiver.requests] == [CHECK]
    assert CHECK not in output


def test_an_abandoned_round_pings_fail_and_the_url_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    secret = tmp_path / "heartbeat-url"
    secret.write_text(f"{receiver.url}{CHECK}\n")
    code, output = _round(tmp_path, monkeypatch, "acme/hb-down", f'url_file = "{secret}"')
    assert code == 1
    assert [path for path, _, _ in receiver.requests] == [f"{CHECK}/fail"]
    assert "check-secret" not in output


def test_a_check_that_fails_costs_the_round_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    receiver.status = 500
    code, output = _round(tmp_path, monkeypatch, "acme/hb-500", f'url = "{receiver.url}{CHECK}"')
    assert code == 1  # the round's own outcome (abandoned), not the check's
    assert len(receiver.requests) == 1 and "check-secret" not in output


def test_url_and_url_file_together_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "hb"
    secret.write_text("https://hc-ping.com/x\n")
    config = tmp_path / "canary.toml"
    config.write_text(f'[heartbeat]\nurl = "https://hc-ping.com/y"\nurl_file = "{secret}"\n')
    with pytest.raises(SettingsError, match="set url or url_file, not both"):
        load_settings(config, env={})
    config.write_text(f'[heartbeat]\nurl_file = "{secret}"\n')
    loaded = load_settings(config, env={}).heartbeat
    assert loaded.url.get_secret_value() == "https://hc-ping.com/x"
    assert "hc-ping" not in repr(loaded)
