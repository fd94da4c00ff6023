"""A model's positive controls: hosts known to filter, probed so that the refusal probe proves
something (:mod:`canary.core.verdict`). Pure.

Apps must not be routed to them: a control is never usable capacity (the floor, the published
list's ``usable_endpoints``, the model-wide rule, ``would_quarantine``'s ``usable``), and it is
published as excluded, by its exact tag (never widened to a base slug: see
:func:`canary.core.identity.names`), in the layer ``control``, on every list and every needs
variant, never withheld by the floor, unless the model says ``publish_controls = false``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from canary.core.model import Exclusion, Layer

CONTROL_REASON = "positive control: known to filter"


@dataclass(frozen=True)
class Controls:
    """A model's positive controls (endpoint tags): hosts known to filter, probed so that the
    refusal probe proves something. Never usable capacity; published as entries of the
    ``control`` layer (each by its exact tag) unless ``published`` is false."""

    tags: frozenset[str] = frozenset()
    published: bool = True

    @classmethod
    def of(cls, tags: Collection[str], published: bool = True) -> Controls:
        return cls(frozenset(tags), published)

    def entries(self, model: str) -> tuple[Exclusion, ...]:
        if not self.published:
            return ()
        return tuple(
            Exclusion(model, tag, Layer.control, CONTROL_REASON) for tag in sorted(self.tags)
        )


NO_CONTROLS = Controls()
