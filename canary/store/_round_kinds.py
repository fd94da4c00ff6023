"""Kinds of rounds: extra ones (`canary round --now`: recorded and shown, but they decide
nothing), and those whose probes never got past OpenRouter.

A round is extra when its ``detail`` says ``"extra": true``; these expressions keep every read
and every status change of the store agreeing on that mark. A round whose probes never got past
OpenRouter says why in ``detail.probing`` (:mod:`canary.core.probing`): :data:`PROBED` leaves it
out of the reads of successful rounds.
"""

from __future__ import annotations

from pydantic import JsonValue
from sqlalchemy import ColumnElement, case, false, func, literal

from canary.store import tables as t

# A round that decides: not an extra round.
DECIDING = func.coalesce(t.rounds.c.detail["extra"].as_boolean(), false()).is_(false())
# A round whose probes got past OpenRouter: its detail names no probing problem
# (canary.core.probing; a key OpenRouter refused, or OpenRouter unreachable).
PROBED = t.rounds.c.detail["probing"].as_string().is_(None)


def abandoned_detail(why: str) -> ColumnElement[JsonValue]:
    """The detail of a round marked abandoned: why, keeping an extra round's mark."""
    json_type = t.rounds.c.detail.type
    return case(
        (DECIDING, literal({"why": why}, type_=json_type)),
        else_=literal({"why": why, "extra": True}, type_=json_type),
    )
