"""Model identity drift: what sits behind a model id changes (a new snapshot behind an alias,
another model answering). Pure.

Per endpoint and round, the model most of its answers report is recorded (:func:`served_model`).
Accepted as expected (:func:`is_expected`): the requested id, the listing's ``model_id``
(permaslug), or the requested id with a date suffix (``-2025-06-01`` or ``-20250601``). A change
from the previous round's value is a ``drift`` change of the field ``served_model`` with old and
new, an alert (:func:`served_model_changes`); the first observation is not; a change seen on every
endpoint of the model at once is one model-level change (tag ``None``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from canary.core.drift import DriftChange
from canary.core.model import Observation

SERVED_MODEL = "served_model"
_DATE_SUFFIX = r"-\d{4}-?\d{2}-?\d{2}"


def served_model(observations: Iterable[Observation]) -> str | None:
    """The model most of an endpoint's completed answers of a round reported (ties: the first
    alphabetically), or None when none reported one."""
    counted = Counter(o.served_model for o in observations if o.completed and o.served_model)
    if not counted:
        return None
    top = max(counted.values())
    return min(m for m, n in counted.items() if n == top)


def is_expected(served: str, requested: str, permaslug: str | None = None) -> bool:
    if served in (requested, permaslug):
        return True
    return re.fullmatch(re.escape(requested) + _DATE_SUFFIX, served) is not None


def served_model_changes(
    model: str, before: Mapping[str, str], after: Mapping[str, str]
) -> tuple[DriftChange, ...]:
    """Changes of each endpoint's served model since the previous round that reported one.

    ``before``: tag -> the model it served last; ``after``: tag -> this round's. An endpoint seen
    for the first time is no change. When every endpoint of ``after`` changed, and all from one
    value to one value, that is one model-level change.
    """
    changed = [
        (tag, before[tag], new)
        for tag, new in sorted(after.items())
        if tag in before and before[tag] != new
    ]
    if not changed:
        return ()
    olds = {old for _, old, _ in changed}
    news = {new for _, _, new in changed}
    if len(changed) == len(after) >= 2 and len(olds) == 1 and len(news) == 1:
        (old,), (new,) = olds, news
        return (
            _change(model, None, old, new, f"every endpoint now serves {new} instead of {old}"),
        )
    return tuple(
        _change(model, tag, old, new, f"{tag} now serves {new} instead of {old}")
        for tag, old, new in changed
    )


def _change(model: str, tag: str | None, old: str, new: str, reason: str) -> DriftChange:
    return DriftChange(model, tag, SERVED_MODEL, old, new, True, reason)


def unexpected(
    served: Mapping[str, str], requested: str, permaslugs: Mapping[str, str | None]
) -> dict[str, str]:
    """The endpoints whose served model is none of the expected ids, with what they served."""
    return {
        tag: value
        for tag, value in sorted(served.items())
        if not is_expected(value, requested, permaslugs.get(tag))
    }
