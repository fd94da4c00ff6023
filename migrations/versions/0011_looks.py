"""Evidence is stored as looks: ``{"kind": "round", "id": <round id>, "at": <its start>}`` in place
of a bare round id, so the rules can tell how far apart two counted looks started (a look too
close to the previous counted one counts for nothing). The evidence the rules read again (each
streak's and recovery's, in ``endpoint_state``) and the quarantines' are rewritten, each start
taken from its round; a round no longer stored leaves its start null. Audit rows keep what they
said (a bare id still reads as a look of kind ``round`` whose start is unknown). No column
changes: the evidence columns are JSON already.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATE = sa.table(
    "endpoint_state",
    sa.column("model", sa.String()),
    sa.column("tag", sa.String()),
    sa.column("streaks", sa.JSON()),
    sa.column("recovery_evidence", sa.JSON()),
)
_QUARANTINES = sa.table(
    "quarantines", sa.column("id", sa.Integer()), sa.column("evidence", sa.JSON())
)
_ROUNDS = sa.table(
    "rounds", sa.column("id", sa.Integer()), sa.column("started_at", sa.DateTime(timezone=True))
)
_CHUNK = 500  # round ids per read of their starts


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def _ids(evidence: Iterable[Any] | None) -> set[int]:
    return {int(x) for x in evidence or () if not isinstance(x, Mapping)}


def _starts(conn: sa.Connection, ids: set[int]) -> dict[int, str | None]:
    wanted = sorted(ids)
    starts: dict[int, str | None] = {}
    for i in range(0, len(wanted), _CHUNK):
        chunk = wanted[i : i + _CHUNK]
        rows = conn.execute(
            sa.select(_ROUNDS.c.id, _ROUNDS.c.started_at).where(_ROUNDS.c.id.in_(chunk))
        )
        starts.update({row.id: _iso(row.started_at) for row in rows})
    return starts


def _looks(evidence: Iterable[Any] | None, starts: Mapping[int, str | None]) -> list[Any]:
    return [
        x if isinstance(x, Mapping) else {"kind": "round", "id": int(x), "at": starts.get(int(x))}
        for x in evidence or ()
    ]


def _round_ids(evidence: Iterable[Any] | None) -> list[Any]:
    return [int(x["id"]) if isinstance(x, Mapping) else x for x in evidence or ()]


def upgrade() -> None:
    conn = op.get_bind()
    states = conn.execute(
        sa.select(_STATE.c.model, _STATE.c.tag, _STATE.c.streaks, _STATE.c.recovery_evidence)
    ).all()
    quarantines = conn.execute(sa.select(_QUARANTINES.c.id, _QUARANTINES.c.evidence)).all()
    ids: set[int] = set()
    for state in states:
        ids |= _ids(state.recovery_evidence)
        for streak in state.streaks or ():
            ids |= _ids(streak.get("evidence"))
    for quarantine in quarantines:
        ids |= _ids(quarantine.evidence)
    if not ids:
        return
    starts = _starts(conn, ids)
    for state in states:
        streaks = [
            {**streak, "evidence": _looks(streak.get("evidence"), starts)}
            for streak in state.streaks or ()
        ]
        recovery = _looks(state.recovery_evidence, starts)
        if streaks == list(state.streaks or ()) and recovery == list(state.recovery_evidence or ()):
            continue
        conn.execute(
            sa.update(_STATE)
            .where(_STATE.c.model == state.model, _STATE.c.tag == state.tag)
            .values(streaks=streaks, recovery_evidence=recovery)
        )
    for quarantine in quarantines:
        looks = _looks(quarantine.evidence, starts)
        if looks != list(quarantine.evidence or ()):
            conn.execute(
                sa.update(_QUARANTINES)
                .where(_QUARANTINES.c.id == quarantine.id)
                .values(evidence=looks)
            )


def downgrade() -> None:
    conn = op.get_bind()
    for state in conn.execute(
        sa.select(_STATE.c.model, _STATE.c.tag, _STATE.c.streaks, _STATE.c.recovery_evidence)
    ).all():
        streaks = [
            {**streak, "evidence": _round_ids(streak.get("evidence"))}
            for streak in state.streaks or ()
        ]
        conn.execute(
            sa.update(_STATE)
            .where(_STATE.c.model == state.model, _STATE.c.tag == state.tag)
            .values(streaks=streaks, recovery_evidence=_round_ids(state.recovery_evidence))
        )
    for quarantine in conn.execute(sa.select(_QUARANTINES.c.id, _QUARANTINES.c.evidence)).all():
        conn.execute(
            sa.update(_QUARANTINES)
            .where(_QUARANTINES.c.id == quarantine.id)
            .values(evidence=_round_ids(quarantine.evidence))
        )
