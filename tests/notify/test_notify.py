"""The notifier sends the audit outbox to real loopback webhooks: each event once, with retries."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from notify_receiver import Receiver

from canary.config.settings import Webhook
from canary.core.events import event_of
from canary.core.model import NOTIFY_KINDS, EventKind, Layer, Look, looks_json
from canary.service.notify import TITLES, Notifier
from canary.store.repository import Store

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
M = "acme/chat-1"


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


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


LOOKS = (Look.round(11, NOW - timedelta(minutes=30)), Look.round(12, NOW))


def _record(store: Store, kind: EventKind, tag: str | None = "bravo", **detail: object) -> int:
    return store.record_audit(event_of(kind, M, tag, dict(detail), LOOKS), "canary", "p-1", NOW)


def _hooks(receiver: Receiver) -> list[Webhook]:
    return [
        Webhook(url=receiver.url + "/json"),
        Webhook(url=receiver.url + "/slack", format="slack"),
    ]


def test_a_quarantine_goes_to_the_json_and_the_slack_webhook(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    audit_id = _record(
        store,
        EventKind.quarantine,
        until="2026-05-02T12:00:00Z",
        step=1,
        reason="hygiene failed twice",
    )
    notifier = Notifier(store, _hooks(receiver), client=client, clock=Clock())
    assert notifier.send_pending() == 1
    [body] = receiver.bodies("/json")
    assert body["id"] == audit_id and body["event"] == "quarantine"
    assert (body["model"], body["provider"], body["evidence"]) == (M, "bravo", looks_json(LOOKS))
    assert "[rounds 11, 12]" in body["summary"]
    assert body["detail"]["until"] == "2026-05-02T12:00:00Z"
    assert (
        "`bravo` of `acme/chat-1`" in body["summary"] and "hygiene failed twice" in body["summary"]
    )
    [slack] = receiver.bodies("/slack")
    assert set(slack) == {"text", "blocks"} and "until 2026-05-02T12:00:00Z" in slack["text"]
    assert slack["blocks"][0]["type"] == "section"
    headers = receiver.requests[0][1]
    assert headers["X-Canary-Event-Id"] == str(audit_id)


def test_an_event_is_never_sent_twice(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    _record(store, EventKind.release, why="recovered")
    notifier = Notifier(store, _hooks(receiver), client=client, clock=Clock())
    assert notifier.send_pending() == 1
    assert notifier.send_pending() == 0
    assert len(receiver.requests) == 2  # one per webhook


def test_every_important_kind_is_sent_and_operator_records_are_not(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    important = [
        "quarantine",
        "would_quarantine",
        "release",
        "floor_held",
        "probe_weak",
        "model_wide",
        "operator_alert",
        "budget",
        "floor_breached",
        "floor_restored",
        "control_missing",
        "exclusion_added",
        "exclusion_removed",
        "maintenance_added",
        "maintenance_removed",
    ]
    for kind in important:
        _record(store, EventKind(kind))
    for kind in (EventKind.verdict, EventKind.republished, EventKind.not_counted):
        _record(store, kind)
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock())
    assert notifier.send_pending() == len(important)
    assert sorted(b["event"] for b in receiver.bodies("/json")) == sorted(important)
    assert set(important) <= set(NOTIFY_KINDS) == set(TITLES)


def test_only_drift_that_breaks_routing_is_sent(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    _record(store, EventKind.drift, field="supported_parameters", old="a", new="b", alert=True)
    quiet = _record(store, EventKind.drift, field="context_length", old=1, new=2, alert=False)
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock())
    assert notifier.send_pending() == 1
    assert [b["detail"]["field"] for b in receiver.bodies("/json")] == ["supported_parameters"]
    assert (
        store.audit(model=M, limit=1)[0].id == quiet
        and store.audit(model=M, limit=1)[0].notified_at is not None
    )


def test_a_model_level_served_model_change_lists_the_previous_ids(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    olds = ["acme/chat-1", "acme/chat-1-2026-01-01"]
    _record(store, EventKind.drift, None, field="served_model", old=olds, new="acme/chat-2",
            alert=True)  # fmt: skip
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock())
    assert notifier.send_pending() == 1
    (body,) = receiver.bodies("/json")
    assert body["detail"]["old"] == olds
    assert "served_model: acme/chat-1, acme/chat-1-2026-01-01 → acme/chat-2" in body["summary"]


def test_the_floor_episode_and_a_missing_control_reach_the_operators(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    why = "1 usable endpoint(s) on the published list, below the capacity floor of 2"
    _record(store, EventKind.floor_breached, tag=None, usable=1, floor=2, why=why, alert=True)
    _record(store, EventKind.floor_restored, tag=None, usable=2, floor=2, why="met again")
    _record(store, EventKind.control_missing, tag=None, missing=["filterhost"], alert=True,
            why="positive control(s) not in the listing: filterhost")  # fmt: skip
    notifier = Notifier(store, _hooks(receiver), client=client, clock=Clock())
    assert notifier.send_pending() == 3
    bodies = receiver.bodies("/json")
    assert [b["event"] for b in bodies] == ["floor_breached", "floor_restored", "control_missing"]
    assert why in bodies[0]["summary"] and "capacity floor breached" in bodies[0]["summary"]
    assert "filterhost" in receiver.bodies("/slack")[2]["text"]


@pytest.mark.parametrize(
    "kind", [EventKind.floor_held, EventKind.control_missing, EventKind.budget, EventKind.drift]
)
def test_a_row_the_core_did_not_mark_as_an_alert_is_marked_without_being_sent(
    store: Store, receiver: Receiver, client: httpx.Client, kind: EventKind
) -> None:
    quiet = _record(store, kind, alert=False)
    loud = _record(store, kind, alert=True)
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock())
    assert notifier.send_pending() == 1
    assert [b["id"] for b in receiver.bodies("/json")] == [loud]
    assert all(r.notified_at is not None for r in store.audit(M, limit=2) if r.id == quiet)
    assert notifier.send_pending() == 0


def test_a_failed_delivery_is_retried_after_its_backoff_and_then_sent_once(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    audit_id = _record(store, EventKind.floor_held, reason="would leave 1 endpoint")
    clock = Clock()
    receiver.fail_next = 1
    notifier = Notifier(
        store, [Webhook(url=receiver.url + "/json")], client=client, clock=clock, backoff_s=60
    )
    assert notifier.send_pending() == 0
    row = next(r for r in store.audit(model=M, limit=5) if r.id == audit_id)
    assert row.notified_at is None and row.notify_attempts == 1
    assert row.next_attempt_at is not None and NOW + timedelta(
        seconds=48
    ) <= row.next_attempt_at <= NOW + timedelta(seconds=72)
    clock.now = NOW + timedelta(seconds=30)
    assert notifier.send_pending() == 0 and len(receiver.requests) == 1  # not due yet
    clock.now = NOW + timedelta(seconds=80)
    assert notifier.send_pending() == 1
    assert notifier.send_pending() == 0
    assert [b["id"] for b in receiver.bodies("/json")] == [audit_id, audit_id]


def test_backoff_grows_exponentially_and_is_capped(store: Store) -> None:
    notifier = Notifier(store, [], clock=Clock(), backoff_s=30, max_backoff_s=600)
    spans = [notifier.backoff(n).total_seconds() for n in (1, 2, 3, 10)]
    assert 24 <= spans[0] <= 36 and 48 <= spans[1] <= 72 and 96 <= spans[2] <= 144
    assert 480 <= spans[3] <= 720
    notifier.close()


def test_an_unreachable_webhook_is_a_failure_not_a_crash(
    store: Store, client: httpx.Client
) -> None:
    with Receiver() as gone:
        url = gone.url
    audit_id = _record(
        store, EventKind.operator_alert, error="401 from OpenRouter: check the API key"
    )
    notifier = Notifier(store, [Webhook(url=url)], client=client, clock=Clock())
    assert notifier.send_pending() == 0
    row = next(r for r in store.audit(model=M, limit=5) if r.id == audit_id)
    assert row.notified_at is None and row.notify_attempts == 1


def test_a_row_is_given_up_after_max_attempts(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    audit_id = _record(store, EventKind.budget, reason="daily budget exceeded")
    receiver.status = 500
    clock = Clock()
    notifier = Notifier(
        store, [Webhook(url=receiver.url)], client=client, clock=clock, max_attempts=3, backoff_s=1
    )
    for _ in range(3):
        notifier.send_pending()
        clock.now += timedelta(hours=1)
    assert len(receiver.requests) == 3
    assert notifier.send_pending() == 0 and len(receiver.requests) == 3
    row = next(r for r in store.audit(model=M, limit=5) if r.id == audit_id)
    assert row.notified_at is not None


def test_two_notifiers_running_at_once_send_each_event_once(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    ids = [_record(store, EventKind.would_quarantine, f"p{i}") for i in range(40)]
    notifiers = [
        Notifier(
            store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock(), batch=4
        )
        for _ in range(2)
    ]
    start = threading.Barrier(2)
    sent: list[int] = []

    def run(notifier: Notifier) -> None:
        start.wait()
        while (n := notifier.send_pending()) > 0:
            sent.append(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in notifiers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = Counter(b["id"] for b in receiver.bodies("/json"))
    assert sorted(counts) == ids and set(counts.values()) == {1}
    assert sum(sent) == 40


def test_a_notifier_makes_its_http_client_once_on_its_first_delivery(
    store: Store, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's housekeeping job and the round job's own pass share one notifier and may
    deliver at once: one client between them; a pass with no webhook makes none (its TLS context
    costs tens of milliseconds)."""
    made: list[httpx.Client] = []

    class Counted(httpx.Client):
        def __init__(self, **settings: object) -> None:
            super().__init__(**settings)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr("canary.service.notify.httpx.Client", Counted)
    assert Notifier(store, [], clock=Clock()).send_pending() == 0
    assert made == []
    ids = [_record(store, EventKind.would_quarantine, f"q{i}") for i in range(20)]
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], clock=Clock(), batch=2)
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        while notifier.send_pending() > 0:
            pass

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    notifier.close()
    counts = Counter(b["id"] for b in receiver.bodies("/json"))
    assert sorted(counts) == ids and set(counts.values()) == {1}
    assert len(made) == 1 and made[0].is_closed


def test_no_webhooks_means_nothing_is_claimed(store: Store) -> None:
    audit_id = _record(store, EventKind.quarantine)
    assert Notifier(store, [], clock=Clock()).send_pending() == 0
    row = next(r for r in store.audit(model=M, limit=5) if r.id == audit_id)
    assert row.notify_attempts == 0 and row.next_attempt_at is None


def test_a_retry_after_a_partial_failure_skips_the_webhook_that_already_has_it(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    with Receiver() as flaky:
        flaky.fail_next = 1
        audit_id = _record(store, EventKind.model_wide, contract="schema")
        clock = Clock()
        hooks = [Webhook(url=receiver.url + "/json"), Webhook(url=flaky.url + "/json")]
        notifier = Notifier(store, hooks, client=client, clock=clock, backoff_s=10)
        assert notifier.send_pending() == 0
        clock.now += timedelta(minutes=5)
        assert notifier.send_pending() == 1
        assert [b["id"] for b in receiver.bodies("/json")] == [audit_id]
        assert [b["id"] for b in flaky.bodies("/json")] == [audit_id, audit_id]  # failed, then sent


def test_a_maintenance_window_tells_the_team_until_when_and_by_whom(
    store: Store, receiver: Receiver, client: httpx.Client
) -> None:
    until = NOW + timedelta(hours=4)
    window = store.add_maintenance(M, "bravo", "provider's notice", "cli:ops", until, NOW)
    store.remove_exclusion(window, "cli:ops", "done early", NOW, layer=Layer.maintenance)
    notifier = Notifier(store, [Webhook(url=receiver.url + "/json")], client=client, clock=Clock())
    assert notifier.send_pending() == 2
    added, removed = (b["summary"] for b in receiver.bodies("/json"))
    assert "maintenance window" in added and "until 2026-05-01T16:00:00Z" in added
    assert "by cli:ops" in added and "provider's notice" in added
    assert "maintenance window ended early" in removed and "done early" in removed
