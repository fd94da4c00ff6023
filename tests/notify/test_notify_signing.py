"""Signed webhooks: the receiver snippet of docs/api.md checks the HMAC over the exact bytes it
received."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

import httpx
import pytest
from notify_receiver import Receiver

from canary.config.settings import Webhook
from canary.core.events import event_of
from canary.core.model import EventKind, Look
from canary.service.notify import Notifier
from canary.store.repository import Store

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
LOOKS = (Look.round(3, NOW - timedelta(minutes=30)), Look.round(4, NOW))
SECRET = "whsec-test-7f3a"


@pytest.fixture
def store(sqlite_store: Store) -> Store:
    """A store of each test's own (tests/conftest.py): its outbox holds this test's rows only."""
    return sqlite_store


DOCS_API = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def receiver_snippet() -> Callable[[bytes, dict[str, str], bytes, int], bool]:
    """The receiver snippet of docs/api.md, run as it is written there."""
    blocks = DOCS_API.read_text().split("```python\n")[1:]
    code = next(block.split("```", 1)[0] for block in blocks if "def verified(" in block)
    namespace: dict[str, Callable[[bytes, dict[str, str], bytes, int], bool]] = {}
    exec(code, namespace)  # noqa: S102 - the documented snippet is what is under test
    return namespace["verified"]


def verify(secret: str, headers: dict[str, str], raw: bytes, now: float, tolerance_s: int) -> bool:
    with mock.patch("time.time", return_value=now):
        return receiver_snippet()(secret.encode(), headers, raw, tolerance_s)


def _send(store: Store, hooks: list[Webhook]) -> None:
    store.record_audit(
        event_of(EventKind.quarantine, "acme/sig-1", "bravo", {"reason": "stray «prefix»"}, LOOKS),
        "canary",
        "p-1",
        NOW,
    )
    with httpx.Client(timeout=5) as client:
        notifier = Notifier(store, hooks, client=client, clock=lambda: NOW)
        assert notifier.send_pending() == 1


def test_a_webhook_with_a_secret_is_signed_over_the_exact_bytes_received(store: Store) -> None:
    with Receiver() as receiver:
        _send(
            store,
            [
                Webhook(url=receiver.url + "/json", secret=SECRET),
                Webhook(url=receiver.url + "/slack", format="slack", secret="another-secret"),
            ],
        )
        by_path = {
            path: (headers, raw)
            for (path, headers, _), raw in zip(receiver.requests, receiver.raw, strict=True)
        }
    now = NOW.timestamp()
    headers, raw = by_path["/json"]
    assert headers["X-Canary-Timestamp"] == str(int(now))
    assert headers["X-Canary-Signature"].startswith("sha256=")
    assert verify(SECRET, headers, raw, now, 300)
    assert "«prefix»".encode() in raw  # the bytes as sent, not re-encoded by the receiver
    assert not verify("wrong-secret", headers, raw, now, 300)
    assert not verify(SECRET, headers, raw + b" ", now, 300)  # one byte more breaks it
    assert not verify(SECRET, headers, raw, (NOW + timedelta(hours=1)).timestamp(), 300)
    slack_headers, slack_raw = by_path["/slack"]
    assert verify("another-secret", slack_headers, slack_raw, now, 300)  # a key per webhook
    for h, r in by_path.values():
        assert SECRET.encode() not in r and SECRET not in str(h)


def test_a_webhook_without_a_secret_is_sent_unsigned_with_its_event_id(store: Store) -> None:
    with Receiver() as receiver:
        _send(store, [Webhook(url=receiver.url + "/plain")])
        ((_, headers, body),) = receiver.requests
    assert "X-Canary-Signature" not in headers and "X-Canary-Timestamp" not in headers
    assert headers["X-Canary-Event-Id"] == str(body["id"])
