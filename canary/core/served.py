"""Model identity drift: what sits behind a model id changes (a new snapshot behind an alias,
another model answering). Pure.

Per endpoint and round, the model its answers report is recorded (:func:`served_model`); a new
value needs a clear majority, more than two thirds of them (:data:`CLEAR_MAJORITY`), and short of
one the previous value stands: an endpoint whose answers split about evenly between two ids
(4 to 3 one way, then the other) does not flip, and alert, every round.
Accepted as expected (:func:`is_expected`): the requested id, the listing's ``model_id``
(permaslug), or the requested id with a date suffix (``-2025-06-01`` or ``-20250601``). A change
from the previous round's value is a ``drift`` change of the field ``served_model`` with old and
new, an alert (:func:`served_model_changes`); the first observation is not; a change seen on every
endpoint of the model at once, all to one new id, is one model-level change (tag ``None``) whose
``old`` lists the previous ids, whether the endpoints agreed on one or not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import JsonValue

from canary.core.drift import DriftChange
from canary.core.model import Observation

SERVED_MODEL = "served_model"
CLEAR_MAJORITY = 2 / 3  # a new served model needs more than this share of the answers
_DATE_SUFFIX = r"-\d{4}-?\d{2}-?\d{2}"


def served_model(observations: Iterable[Observation], previous: str | None = None) -> str | None:
    """The model an endpoint's completed answers of a round reported, or None.

    With no ``previous`` value (a first sighting, never an alert; or ``canary probe``) the most
    reported wins, ties going to the first alphabetically. Otherwise an id other than
    ``previous`` needs a clear majority, more than :data:`CLEAR_MAJORITY` of the answers that
    named a model; short of one, ``previous`` stands while some answer still reports it, and
    nothing is recorded (None) when none does, so the next round is still compared with it.
    """
    counted = Counter(o.served_model for o in observations if o.completed and o.served_model)
    if not counted:
        return None
    top = max(counted.values())
    leader = min(m for m, n in counted.items() if n == top)
    if previous is None or leader == previous:
        return leader
    if top > CLEAR_MAJORITY * sum(counted.values()):
        return leader
    return previous if previous in counted else None


def is_expected(served: str, requested: str, permaslug: str | None = None) -> bool:
    if served in (requested, permaslug):
        return True
    return re.fullmatch(re.escape(requested) + _DATE_SUFFIX, served) is not None


def served_model_changes(
    model: str, before: Mapping[str, str], after: Mapping[str, str]
) -> tuple[DriftChange, ...]:
    """Changes of each endpoint's served model since the previous round that reported one.

    ``before``: tag -> the model it served last; ``after``: tag -> this round's. An endpoint seen
    for the first time is no change. When every endpoint of ``after`` (two or more) changed, all
    to one new id, that is one model-level change, whatever each served before: its ``old`` is
    the sorted list of the previous ids.
    """
    changed = [
        (tag, before[tag], new)
        for tag, new in sorted(after.items())
        if tag in before and before[tag] != new
    ]
    if not changed:
        return ()
    news = {new for _, _, new in changed}
    if len(changed) == len(after) >= 2 and len(news) == 1:
        (new,) = news
        olds = sorted({old for _, old, _ in changed})
        reason = f"every endpoint now serves {new} instead of {', '.join(olds)}"
        return (DriftChange(model, None, SERVED_MODEL, list[JsonValue](olds), new, True, reason),)
    return tuple(
        DriftChange(
            model, tag, SERVED_MODEL, old, new, True, f"{tag} now serves {new} instead of {old}"
        )
        for tag, old, new in changed
    )
