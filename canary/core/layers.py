"""The exclusion layers (built-in, runtime, quarantine, and the positive controls) merged into one
ignore list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from canary.core.model import Exclusion, Layer, iso_utc

_LAYER_ORDER = {layer: i for i, layer in enumerate(Layer)}  # builtin, ..., control, requirement


__all__ = ["exclusion_key", "iso_utc", "merge_layers"]


def exclusion_key(entry: Exclusion) -> tuple[str, int, str]:
    return (entry.tag, _LAYER_ORDER[entry.layer], entry.reason)


def merge_layers(
    model: str,
    builtin: Sequence[Exclusion],
    runtime: Sequence[Exclusion],
    quarantines: Sequence[Exclusion],
    now: datetime,
    controls: Sequence[Exclusion] = (),
    requirements: Sequence[Exclusion] = (),
) -> tuple[Exclusion, ...]:
    """The model's exclusions active at ``now`` from every layer, sorted by tag then layer.

    Entries of other models are left out. A tag excluded by several layers appears once per layer
    (each entry explains itself). An entry's layer is
    the layer it was passed in, whatever its ``layer`` field says.
    """
    merged: list[Exclusion] = []
    for layer, entries in (
        (Layer.builtin, builtin),
        (Layer.runtime, runtime),
        (Layer.quarantine, quarantines),
        (Layer.control, controls),
        (Layer.requirement, requirements),
    ):
        for entry in entries:
            if entry.model != model or not entry.active(now):
                continue
            merged.append(entry if entry.layer is layer else replace(entry, layer=layer))
    return tuple(sorted(merged, key=exclusion_key))
