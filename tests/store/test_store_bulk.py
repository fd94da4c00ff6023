"""The round's bulk writes (plain executemany on the driver) store exactly what SQLAlchemy's Core
insert stores, on SQLite and PostgreSQL: the same values read back, times that compare in SQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import insert, select

from canary.store import Store
from canary.store import tables as t
from canary.store.bulk import insert_rows

T0 = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


def _row(round_id: int, model: str, tag: str, at: datetime, **over: Any) -> dict[str, Any]:
    row = {
        "round_id": round_id,
        "model": model,
        "tag": tag,
        "contract": "ttft",
        "language": None,
        "attempt": 1,
        "transport": "ok",
        "status": 200,
        "error": None,
        "served_by": "Alpha",
        "attribution_ok": True,
        "ttft_s": 0.4125,
        "ttft_censored": False,
        "reasoning_s": None,
        "total_s": 1.5,
        "finish_reason": "stop",
        "native_finish_reason": None,
        "sample": "Olá, ‘mundo’ — 你好",
        "prompt_tokens": 12,
        "completion_tokens": 40,
        "cost_usd": 1.25e-05,
        "checksum": "c1",
        "nonce": "",
        "at": at,
    }
    return {**row, **over}


def _read(store: Store, model: str) -> dict[str, dict[str, Any]]:
    with store.engine.connect() as conn:
        rows = conn.execute(select(t.probes).where(t.probes.c.model == model)).mappings()
        return {r["tag"]: {k: v for k, v in r.items() if k not in ("id", "tag")} for r in rows}


def test_bulk_rows_read_back_as_core_rows(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "runner-a", "p-1", {})
    assert isinstance(round_id, int)
    # an aware time in another zone is stored as its UTC instant, as the column type does
    later = (T0 + timedelta(seconds=1)).astimezone(timezone(timedelta(hours=-5)))
    with store.engine.begin() as conn:
        conn.execute(insert(t.probes), [_row(round_id, model, "core", T0)])
        insert_rows(
            conn,
            t.probes,
            [
                _row(round_id, model, "bulk", T0),
                _row(round_id, model, "bulk-null", later, ttft_s=None, attribution_ok=False),
            ],
        )
    rows = _read(store, model)
    assert rows["bulk"] == rows["core"]
    assert rows["bulk-null"]["ttft_s"] is None and rows["bulk-null"]["attribution_ok"] is False
    assert rows["bulk-null"]["at"] == T0 + timedelta(seconds=1)
    with store.engine.connect() as conn:
        at = t.probes.c.at
        since = select(t.probes.c.tag).where(t.probes.c.model == model, at > T0)
        assert set(conn.scalars(since)) == {"bulk-null"}
        exactly = select(t.probes.c.tag).where(t.probes.c.model == model, at == T0)
        assert set(conn.scalars(exactly)) == {"core", "bulk"}


def test_a_naive_time_is_refused(store: Store, model: str) -> None:
    round_id = store.claim_round(model, T0, "runner-a", "p-1", {})
    assert isinstance(round_id, int)
    naive = _row(round_id, model, "naive", T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="naive datetime"), store.engine.begin() as conn:
        insert_rows(conn, t.probes, [naive])
    assert _read(store, model) == {}


def test_what_only_sqlalchemy_converts_is_refused(store: Store, model: str) -> None:
    row = {"model": model, "scheduled_at": T0, "detail": {"extra": True}}
    with pytest.raises(TypeError, match=r"rounds\.detail \(JSON\)"), store.engine.begin() as conn:
        insert_rows(conn, t.rounds, [row])
    with store.engine.connect() as conn:
        assert conn.scalars(select(t.rounds.c.id).where(t.rounds.c.model == model)).all() == []
