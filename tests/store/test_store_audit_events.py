"""Audit rows read back as typed events: the JSON they were written with, older shapes included."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import insert

from canary.core.events import Action, QuarantineStarted, QuarantineWithheld, Released
from canary.core.model import Look
from canary.store import Store
from canary.store import tables as t

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _write_row(store: Store, event: str, tag: str, model: str, detail: str, evidence: str) -> None:
    """A row as an older canary wrote it, through no typed event."""
    with store.engine.begin() as conn:
        conn.execute(
            insert(t.audit).values(
                at=T0, actor="canary", event=event, model=model, tag=tag,
                detail=json.loads(detail), evidence=json.loads(evidence), notify_attempts=0,
            )
        )  # fmt: skip


def test_rows_written_before_typed_events_load_as_typed_events(store: Store, model: str) -> None:
    _write_row(store, "quarantine", "alpha", model, '{"until": "2026-03-02T12:00:00Z"}', "[7, 8]")
    release = (
        '{"why": "manual", "since": null, "until": "2026-03-02T12:00:00Z", "at": null,'
        ' "reason": "false positive", "actor": "cli:ana", "quarantine_id": 3, "gone": 1}'
    )
    _write_row(store, "release", "bravo", model, release, "[]")
    withheld = (
        '{"withheld": "charlie", "quarantine_id": 4, "floor": 2, "usable": 1, "why": "w",'
        ' "action": {"event": "exclusion_added", "exclusion_id": 9, "tag": "delta",'
        ' "force": true, "actor": "cli:ana"}}'
    )
    _write_row(store, "floor_held", "charlie", model, withheld, "[]")
    rows = {r.event: r for r in store.audit(model)}
    until = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert rows["quarantine"].decided == QuarantineStarted(
        model=model, tag="alpha", until=until, evidence=(Look.round(7, None), Look.round(8, None))
    )
    assert rows["release"].decided == Released(
        model=model, tag="bravo", why="manual", until=until, reason="false positive",
        actor="cli:ana", quarantine_id=3,
    )  # fmt: skip
    assert rows["floor_held"].decided == QuarantineWithheld(
        model=model, tag="charlie", withheld="charlie", quarantine_id=4, floor=2, usable=1,
        why="w", action=Action("exclusion_added", 9, "delta", True, "cli:ana"),
    )  # fmt: skip
    # the stored JSON is served as it was written, unknown keys included
    assert rows["release"].detail == json.loads(release)


def test_an_event_written_and_read_back_keeps_its_json(store: Store, model: str) -> None:
    event = Released(
        model=model, tag="alpha", why="manual", until=T0, at=T0, reason="ok", actor="cli:ana",
        evidence=(Look.round(1, T0),),
    )  # fmt: skip
    audit_id = store.record_audit(event, "cli:ana", "p-1", T0)
    [row] = [a for a in store.audit(model) if a.id == audit_id]
    assert row.detail == {
        "why": "manual",
        "since": None,
        "until": "2026-03-01T12:00:00Z",
        "at": "2026-03-01T12:00:00Z",
        "reason": "ok",
        "actor": "cli:ana",
    }
    assert row.decided == event
