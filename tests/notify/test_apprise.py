"""`[[notifiers]]`: the outbox through real Apprise to a loopback receiver (Apprise's ``json://``
scheme: the library sends real HTTP), beside the signed webhooks; each target that accepts a row
is recorded on it, a retry sends only to the ones that lack it, and no URL is ever shown."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import structlog
from cli_runner import CliRunner
from notify_receiver import Receiver
from pydantic import SecretStr

from canary.cli.main import app
from canary.config.settings import AppriseNotifier, SettingsError, Webhook, load_settings
from canary.core.events import event_of
from canary.core.model import EventKind
from canary.service.notify import Notifier
from canary.store.repository import Store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
M = "acme/apprise-1"
TOKEN = "tok-APPRISE-SECRET-42"  # the secret part of an Apprise URL


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def store(store: Store) -> Store:
    """The module's store with earlier tests' rows already sent: each test sees only its own."""
    kinds = [k.value for k in EventKind]
    while rows := store.pending_notifications(NOW + timedelta(days=3650), 500, kinds):
        for row in rows:
            store.mark_notified(row.id, NOW)
    return store


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def apprise_url(receiver: Receiver, path: str = "/apprise") -> str:
    return receiver.url.replace("http://", "json://") + f"{path}/{TOKEN}"


def _record(store: Store, kind: EventKind, tag: str = "bravo", **detail: object) -> int:
    return store.record_audit(event_of(kind, M, tag, dict(detail), ()), "canary", "p-1", NOW)


def _row(store: Store, audit_id: int):  # type: ignore[no-untyped-def]
    return next(r for r in store.audit(M, limit=50) if r.id == audit_id)


def test_a_row_goes_through_apprise_and_the_webhook_and_each_is_recorded(
    store: Store, receiver: Receiver
) -> None:
    audit_id = _record(store, EventKind.quarantine, until="2026-06-02T12:00:00Z", step=1)
    notifier = Notifier(
        store,
        [Webhook(url=receiver.url + "/hook")],
        [AppriseNotifier(url=SecretStr(apprise_url(receiver)), name="ops-slack")],
        clock=Clock(),
    )
    assert notifier.send_pending() == 1
    [sent] = receiver.bodies(f"/apprise/{TOKEN}")
    assert sent["title"] == "canary: quarantined"
    assert sent["message"].startswith(":no_entry: quarantined: `bravo` of `acme/apprise-1`")
    assert f"quarantine #{audit_id}" in sent["message"]  # the id to drop repeats by
    assert [b["id"] for b in receiver.bodies("/hook")] == [audit_id]
    row = _row(store, audit_id)
    assert row.delivered_to == ("ops-slack", "webhooks[0]") and row.notified_at is not None
    notifier.close()


def test_a_failed_target_is_retried_until_it_succeeds_and_only_it(
    store: Store, receiver: Receiver
) -> None:
    """The retry is another notifier (a restart): what was delivered is read from the row."""
    audit_id = _record(store, EventKind.model_wide, contract="schema")
    clock = Clock()
    with Receiver() as flaky:
        flaky.fail_next = 2
        hooks = [Webhook(url=receiver.url + "/hook")]
        targets = [AppriseNotifier(url=SecretStr(apprise_url(flaky)))]
        for expected in (0, 0, 1):
            notifier = Notifier(store, hooks, targets, clock=clock, backoff_s=10)
            assert notifier.send_pending() == expected
            notifier.close()
            clock.now += timedelta(minutes=5)
        assert len(flaky.bodies(f"/apprise/{TOKEN}")) == 3  # failed, failed, sent
    assert [b["id"] for b in receiver.bodies("/hook")] == [audit_id]  # once: recorded
    row = _row(store, audit_id)
    assert row.delivered_to == ("notifiers[0]:json", "webhooks[0]")
    assert row.notify_attempts == 3 and row.notified_at is not None


def test_a_notifier_takes_only_its_events(store: Store, receiver: Receiver) -> None:
    release = _record(store, EventKind.release, why="recovered")
    quarantine = _record(store, EventKind.quarantine)
    only = AppriseNotifier(url=SecretStr(apprise_url(receiver)), events=("release",))
    notifier = Notifier(store, [], [only], clock=Clock())
    assert notifier.send_pending() == 1
    assert [b["title"] for b in receiver.bodies(f"/apprise/{TOKEN}")] == ["canary: released"]
    assert _row(store, release).delivered_to == ("notifiers[0]:json",)
    untouched = _row(store, quarantine)  # no target takes it: not even claimed
    assert untouched.notified_at is None and untouched.next_attempt_at is None
    both = Notifier(store, [Webhook(url=receiver.url + "/hook")], [only], clock=Clock())
    assert both.send_pending() == 1  # the quarantine, to the webhook alone
    assert _row(store, quarantine).delivered_to == ("webhooks[0]",)
    assert len(receiver.bodies(f"/apprise/{TOKEN}")) == 1
    both.close()


def test_a_hung_or_unknown_target_is_a_failure_that_names_no_url(
    store: Store,
    receiver: Receiver,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Apprise and the HTTP stack under it log URLs (a path, a password): not heard, at any
    level, nor printed by logging's last resort."""
    heard = io.StringIO()
    root = logging.getLogger()
    root.addHandler(handler := logging.StreamHandler(heard))
    monkeypatch.setattr(root, "level", logging.DEBUG)
    audit_id = _record(store, EventKind.operator_alert, error="401 from OpenRouter")
    hung = AppriseNotifier(url=SecretStr(apprise_url(receiver)), timeout_s=0.05)
    unknown = AppriseNotifier(url=SecretStr(f"nosuchscheme://{TOKEN}@host"))
    receiver.released.clear()
    try:
        with structlog.testing.capture_logs() as logs:
            assert Notifier(store, [], [hung, unknown], clock=Clock()).send_pending() == 0
    finally:
        receiver.released.set()
        root.removeHandler(handler)
    [failed] = [line for line in logs if line["event"] == "notification_failed"]
    assert failed["errors"] == [
        "notifiers[0]:json: no answer within 0.05 s",
        "notifiers[1]:nosuchscheme: not a URL Apprise knows",
    ]
    assert TOKEN not in json.dumps(logs, default=str) + heard.getvalue() + str(capfd.readouterr())
    row = _row(store, audit_id)
    assert row.notified_at is None and row.notify_attempts == 1 and row.delivered_to == ()


def test_exclusions_added_and_removed_by_an_operator_are_notified(
    store: Store, receiver: Receiver, tmp_path: Path
) -> None:
    """`canary exclude add` and `remove` write their events; the notifier built from the same
    settings file (url_file, as a secret mount) sends both."""
    secret = tmp_path / "apprise-url"
    secret.write_text(apprise_url(receiver) + "\n")
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{store.url}"\n[[models]]\nid = "{M}"\ncapacity_floor = 0\n'
        f'[[notifiers]]\nurl_file = "{secret}"\n'
        'events = ["exclusion_added", "exclusion_removed"]\n',
        encoding="utf-8",
    )
    cli = CliRunner()
    added = cli.invoke(
        app, ["--config", str(config), "exclude", "add", "-m", M, "-p", "delta", "-r", "incident 7"]
    )
    assert added.exit_code == 0, added.output
    [entry] = [e for e in store.active_exclusions(M, datetime.now(UTC)) if e.tag == "delta"]
    removed = cli.invoke(
        app, ["--config", str(config), "exclude", "remove", str(entry.id), "-r", "fixed"]
    )
    assert removed.exit_code == 0, removed.output
    settings = load_settings(config, env={})
    assert Notifier(store, settings.webhooks, settings.notifiers).send_pending() == 2
    titles, messages = zip(
        *((b["title"], b["message"]) for b in receiver.bodies(f"/apprise/{TOKEN}")), strict=True
    )
    assert titles == ("canary: operator exclusion added", "canary: operator exclusion removed")
    assert "`delta` of `acme/apprise-1`" in messages[0] and "incident 7" in messages[0]
    assert "fixed" in messages[1] and "by cli:" in messages[1]
    assert TOKEN not in added.output + removed.output


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('url = "json://h/{t}"\nurl_file = "{f}"', "set url or url_file, not both"),
        ('name = "x"', "must hold an Apprise URL"),
        ('url = "{t}"', "must hold an Apprise URL"),
        ('url = "json://h/{t}"\nevents = ["verdict"]', "events.0"),
        ('url = "json://h/{t}"\nname = "a"\n[[notifiers]]\nurl_file = "{f}"\nname = "a"',
         "two notifiers have the same name"),
    ],
)  # fmt: skip
def test_bad_notifiers_stop_start_up_with_one_line_and_no_url(
    tmp_path: Path, table: str, problem: str
) -> None:
    secret = tmp_path / "url"
    secret.write_text(f"json://h/{TOKEN}\n")
    config = tmp_path / "canary.toml"
    config.write_text("[[notifiers]]\n" + table.format(t=TOKEN, f=secret), encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        load_settings(config, env={})
    message = str(raised.value)
    assert problem in message and "\n" not in message and TOKEN not in message
    config.write_text(f'[[notifiers]]\nurl_file = "{secret}"\n', encoding="utf-8")
    [loaded] = load_settings(config, env={}).notifiers
    assert loaded.url.get_secret_value() == f"json://h/{TOKEN}" and TOKEN not in repr(loaded)
    assert loaded.label(0) == "notifiers[0]:json"
