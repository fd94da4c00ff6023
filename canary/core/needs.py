"""A list per set of needs: an app that never asks for a capability keeps the endpoints that
failed only that capability's contract. Pure.

Mapping: ``schema`` -> ``structured_outputs``, ``tools`` -> ``tools``. ``ttft``, ``refusal``,
``language`` and ``hygiene`` concern every request, so a quarantine they caused applies to every
app; so do built-in and runtime entries, the positive controls' entries, and quarantines
recorded before causes were kept (``all``). Without needs the list is the full one (the safe
default).

A variant is published on its own (:func:`publish_for_needs`): the capacity floor is held on the
variant's list, not inherited from the full list's, and its capacity is only the endpoints that
advertise every need (an endpoint without ``tools`` cannot serve an app that calls tools, however
healthy), so a quarantine the full list withheld for capacity the app cannot use anyway is not
withheld from that app, and a variant whose capable endpoints are excluded says it is breached.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

from canary.core.controls import Controls
from canary.core.floor import Publication, publish
from canary.core.identity import CAPABILITIES, Listed
from canary.core.model import Contract, Exclusion

CAPABILITY_OF = {Contract.schema.value: "structured_outputs", Contract.tools.value: "tools"}
KNOWN_NEEDS = tuple(sorted(CAPABILITIES))


class UnknownNeed(ValueError):
    """A need that names no capability canary judges; the message lists the known ones."""

    def __init__(self, unknown: Iterable[str]) -> None:
        self.unknown = tuple(sorted(unknown))
        super().__init__(
            f"unknown need(s) {', '.join(self.unknown)} (known: {', '.join(KNOWN_NEEDS)})"
        )


def parse_needs(text: str | None) -> frozenset[str]:
    """``"structured_outputs,tools"`` -> its set; empty or None -> no needs (the full list)."""
    needs = frozenset(part.strip() for part in (text or "").split(",") if part.strip())
    unknown = needs - set(KNOWN_NEEDS)
    if unknown:
        raise UnknownNeed(unknown)
    return needs


def causes_apply(causes: Collection[str], needs: Collection[str]) -> bool:
    """Do a quarantine's ``causes`` concern an app with ``needs``? No causes recorded: yes."""
    if not causes:
        return True
    return any(
        CAPABILITY_OF.get(cause, "") in needs or cause not in CAPABILITY_OF for cause in causes
    )


def publish_for_needs(
    model: str,
    listing: Sequence[Listed] | None,
    builtin: Sequence[Exclusion],
    runtime: Sequence[Exclusion],
    quarantines: Sequence[Exclusion],
    *,
    needs: Collection[str],
    floor: int,
    now: datetime,
    controls: Controls,
    requirements: Sequence[Exclusion] = (),
) -> Publication:
    """The published list of an app with ``needs``: the core's :func:`publish` over the layers
    cut to the entries that apply to those needs (no needs: every quarantine applies), its
    capacity the endpoints that advertise every need, so the capacity floor is held on this list
    itself. A quarantine the full list had to withhold may be published here (the capacity the
    app cannot use anyway is out of the count), and ``usable``, ``withheld`` and ``breached``
    are this list's own. Built-in, runtime and control entries always apply, and so do a task
    profile's ``requirements``."""
    kept = [q for q in quarantines if causes_apply(q.causes, needs)] if needs else quarantines
    return publish(
        model, listing, builtin, runtime, kept, floor=floor, now=now, controls=controls,
        needs=needs, requirements=requirements,
    )  # fmt: skip
