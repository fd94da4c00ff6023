"""Sends important audit rows (the outbox) to the configured webhooks and Apprise notifiers.

The audit table is the outbox: a decision and its audit row are written in one transaction, and
this module sends the rows whose kind matters to operators. Each target (a webhook, or an Apprise
URL with the ``events`` it takes) that accepts a row is recorded on the row by its label, never
its URL (``delivered_to``); the row is marked notified once every target that takes its kind has
it. On a failure it is put back with an exponential backoff (``mark_notify_failed``) and the
retry skips the targets that have it; after ``max_attempts`` it is given up (marked, and logged
loudly). The store's claim keeps two notifiers from taking the same row.

Delivery is at least once: a crash between sending and recording, or a claim that ran out while
a target was slow, can repeat one. Each delivery carries the audit id (``id`` in the body and the
``X-Canary-Event-Id`` header of a webhook, ``#<id>`` in an Apprise body) to drop repeats by.

A webhook with a ``secret`` is signed: ``X-Canary-Timestamp: <unix seconds>`` and
``X-Canary-Signature: sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` under the secret,
over the body's bytes exactly as sent. Without a secret, deliveries are unsigned.

Which rows alert is decided by the core and recorded with the row: a row whose detail says
``"alert": false`` (a drift change that cannot break routing, a ``floor_held`` after the first of
its streak, a ``control_missing`` within a day of the last alert) is marked without being sent;
every other row of the notified kinds (:data:`canary.core.model.NOTIFY_KINDS`) is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING

import httpx
from pydantic import JsonValue

from canary.core.events import (
    Drifted,
    ExclusionAdded,
    ExclusionRemoved,
    MaintenanceAdded,
    ModelWide,
    QuarantineStarted,
    Released,
    alerts,
    explanation,
)
from canary.core.model import NOTIFY_KINDS, Look, iso_utc, looks_json
from canary.service import metrics
from canary.service.logs import get_logger, scrub

if TYPE_CHECKING:
    from canary.config.settings import AppriseNotifier, Webhook
    from canary.store.log_rows import AuditRow
    from canary.store.repository import Store

log = get_logger("canary.service.notify")
# Apprise and the HTTP stack under it log URLs (a path, a password): their lines are not heard
for _name in ("apprise", "urllib3", "requests_oauthlib"):
    logging.getLogger(_name).propagate = False
logging.getLogger("apprise").addHandler(logging.NullHandler())  # else logging's last resort prints

TITLES = {
    "quarantine": ":no_entry: quarantined",
    "would_quarantine": ":eyes: would quarantine (observe mode)",
    "release": ":white_check_mark: released",
    "floor_held": ":warning: capacity floor held: quarantine not applied",
    "probe_weak": ":warning: probe weak: the positive control passed",
    "model_wide": ":warning: model-wide failure",
    "operator_alert": ":rotating_light: operator alert",
    "budget": ":moneybag: probe budget",
    "drift": ":triangular_ruler: endpoint drift",
    "floor_breached": ":rotating_light: capacity floor breached",
    "floor_restored": ":white_check_mark: capacity floor met again",
    "control_missing": ":warning: positive control missing from the listing",
    "exclusion_added": ":no_entry_sign: operator exclusion added",
    "exclusion_removed": ":leftwards_arrow_with_hook: operator exclusion removed",
    "maintenance_added": ":construction: maintenance window: its results count for nothing",
    "maintenance_removed": ":leftwards_arrow_with_hook: maintenance window ended early",
    "report_confirmed": ":mega: an app's report confirmed by a focused check",
    "equality_outlier": ":mag: equality: an endpoint answers unlike its peers (advisory)",
}


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of ``<timestamp>.<body>`` under ``secret``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def signed_headers(hook: Webhook, row_id: int, body: bytes, now: datetime) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "X-Canary-Event-Id": str(row_id),
        "User-Agent": "canary-notifier",
    }
    secret = hook.secret.get_secret_value()
    if secret:
        timestamp = str(int(now.timestamp()))
        headers["X-Canary-Timestamp"] = timestamp
        headers["X-Canary-Signature"] = signature(secret, timestamp, body)
    return headers


def summary(row: AuditRow) -> str:
    """One line a person can act on."""
    event = row.decided
    who = f"`{row.tag}` of `{row.model}`" if row.tag else f"`{row.model or 'canary'}`"
    parts = [f"{TITLES.get(row.event, row.event)}: {who}"]
    if isinstance(event, QuarantineStarted | ExclusionAdded | MaintenanceAdded) and event.until:
        parts.append(f"until {iso_utc(event.until)}")
        if isinstance(event, QuarantineStarted) and event.step:
            parts.append(f"(step {event.step})")
    elif isinstance(event, Released) and event.why:
        parts.append(f"({event.why})")
    elif isinstance(event, ModelWide):
        parts.append(f"contract {event.contract}")
    elif isinstance(event, Drifted) and event.field:
        parts.append(f"{event.field}: {_listed(event.old)} → {_listed(event.new)}")
    if isinstance(event, ExclusionAdded | ExclusionRemoved | MaintenanceAdded):
        parts.append(f"by {row.actor}")
    reason = explanation(event)
    if isinstance(event, Released) and reason == event.why:
        reason = ""  # said in brackets above
    if reason:
        parts.append(f"— {reason}")
    if row.evidence:
        parts.append(f"[{looks_text(row.evidence)}]")
    return scrub(" ".join(parts))


def looks_text(looks: Sequence[Look]) -> str:
    """``rounds 12, 14`` (``round 12, focused 3`` when the kinds differ)."""
    kinds = {look.kind for look in looks}
    if len(kinds) == 1:
        (kind,) = kinds
        plural = "s" if len(looks) > 1 else ""
        return f"{kind.value}{plural} {', '.join(str(look.id) for look in looks)}"
    return ", ".join(f"{look.kind.value} {look.id}" for look in looks)


def _listed(value: JsonValue) -> str:
    """A list (a model-level served-model change's previous ids) as ``a, b``."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def json_body(row: AuditRow) -> dict[str, JsonValue]:
    return {
        "id": row.id,
        "event": row.event,
        "at": iso_utc(row.at),
        "model": row.model,
        "provider": row.tag,
        "actor": row.actor,
        "detail": row.detail,
        "evidence": looks_json(row.evidence or ()),
        "policy_version": row.policy_version,
        "summary": summary(row),
    }


def slack_body(row: AuditRow) -> dict[str, JsonValue]:
    text = summary(row)
    fields = [f"*event* `{row.event}`", f"*at* {iso_utc(row.at)}", f"*actor* {row.actor}"]
    if row.policy_version:
        fields.append(f"*policy* `{row.policy_version}`")
    return {
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f} for f in fields]},
        ],
    }


@dataclass(frozen=True)
class Target:
    """Where the outbox sends: a label that names it in logs and on the row (never its URL), the
    kinds it takes, and how one row is sent (``None`` when accepted, else what went wrong)."""

    label: str
    kinds: frozenset[str]
    send: Callable[[AuditRow], str | None]


def send_apprise(notifier: AppriseNotifier, row: AuditRow) -> str | None:
    """One row to one Apprise URL. Apprise blocks: it runs on a thread of its own, waited for at
    most ``timeout_s`` (a hung service's thread is left to finish, and the row is retried)."""
    import apprise  # its imports and plugin loading are heavy: only when a notifier sends

    sender = apprise.Apprise()
    if not sender.add(notifier.url.get_secret_value()):
        return "not a URL Apprise knows"
    title = f"canary: {TITLES[row.event].partition(' ')[2]}"
    body = f"{summary(row)}\n\n{row.event} #{row.id} at {iso_utc(row.at)}"
    sent: list[bool] = []

    def send() -> None:
        sent.append(bool(sender.notify(body=body, title=title)))

    (thread := threading.Thread(target=send, name="apprise", daemon=True)).start()
    thread.join(notifier.timeout_s)
    if thread.is_alive():
        return f"no answer within {notifier.timeout_s:g} s"
    return None if sent == [True] else "not delivered"


class Notifier:
    """Sends pending outbox rows to every target, with retries and backoff (at least once)."""

    def __init__(
        self,
        store: Store,
        webhooks: Sequence[Webhook],
        notifiers: Sequence[AppriseNotifier] = (),
        *,
        client: httpx.Client | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        batch: int = 50,
        max_attempts: int = 10,
        backoff_s: float = 30.0,
        max_backoff_s: float = 3600.0,
        timeout_s: float = 10.0,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        every = frozenset(NOTIFY_KINDS)
        self.targets = (
            *(Target(f"webhooks[{i}]", every, partial(self._deliver, w)) for i, w in enumerate(webhooks)),
            *(
                Target(n.label(i), frozenset(n.events), partial(send_apprise, n))
                for i, n in enumerate(notifiers)
            ),
        )  # fmt: skip
        self.kinds = sorted(frozenset[str]().union(*(t.kinds for t in self.targets)))
        # made on the first delivery: building its TLS context costs CPU, and most
        # passes (no webhook, nothing due) send nothing
        self._client = client
        self._owns_client = client is None
        self._timeout_s = timeout_s
        self._client_lock = threading.Lock()
        self.clock = clock
        self.batch = batch
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._rng = rng or random.Random()

    def close(self) -> None:
        with self._client_lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        # the daemon's housekeeping job and the round job's own pass may deliver at once
        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._timeout_s, follow_redirects=False)
            return self._client

    def backoff(self, attempts: int) -> timedelta:
        """Exponential with jitter: backoff_s × 2^(attempts-1), capped, times 0.8..1.2."""
        base = min(self.max_backoff_s, self.backoff_s * 2 ** max(0, attempts - 1))
        return timedelta(seconds=base * self._rng.uniform(0.8, 1.2))

    def send_pending(self) -> int:
        """Send one batch of due rows; returns how many rows every target now has."""
        if not self.targets:
            return 0
        now = self.clock()
        rows = self.store.pending_notifications(now, self.batch, self.kinds)
        delivered = 0
        for row in rows:
            if not alerts(row.decided):
                self.store.mark_notified(row.id, now)
                continue
            done, failures = set(row.delivered_to), []
            for target in self.targets:
                if target.label in done or row.event not in target.kinds:
                    continue  # it has the row (an earlier try), or does not take its kind
                error = target.send(row)
                metrics.PROCESS.observe_notification(error is None)
                if error:
                    failures.append(f"{target.label}: {error}")
                else:
                    done.add(target.label)
                    self.store.mark_delivered(row.id, done)
            if not failures:
                self.store.mark_notified(row.id, self.clock())
                delivered += 1
                continue
            attempts = (row.notify_attempts or 0) + 1
            if attempts >= self.max_attempts:
                log.error(
                    "notification_given_up",
                    audit_id=row.id,
                    kind=row.event,
                    attempts=attempts,
                    errors=failures,
                )
                self.store.mark_notified(row.id, self.clock())
                continue
            retry_at = self.clock() + self.backoff(attempts)
            log.warning(
                "notification_failed",
                audit_id=row.id,
                kind=row.event,
                retry_at=iso_utc(retry_at),
                errors=failures,
            )
            self.store.mark_notify_failed(row.id, retry_at)
        return delivered

    def _deliver(self, hook: Webhook, row: AuditRow) -> str | None:
        document = slack_body(row) if hook.format == "slack" else json_body(row)
        body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            response = self._http().post(
                hook.url, content=body, headers=signed_headers(hook, row.id, body, self.clock())
            )
        except httpx.HTTPError as exc:
            return type(exc).__name__
        return None if response.is_success else f"HTTP {response.status_code}"
