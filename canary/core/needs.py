"""A list per set of needs: an app that never asks for a capability keeps the endpoints that
failed only that capability's contract. Pure.

Mapping: ``schema`` -> ``structured_outputs``, ``tools`` -> ``tools``. ``ttft``, ``refusal``,
``language`` and ``hygiene`` concern every request, so a quarantine they caused applies to every
app; so do built-in and runtime entries, and quarantines recorded before causes were kept
(``all``). Without needs the list is the full one (the safe default).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from canary.core.floor import Publication
from canary.core.identity import usable
from canary.core.model import Contract, Exclusion, Layer

CAPABILITY_OF = {Contract.schema.value: "structured_outputs", Contract.tools.value: "tools"}
KNOWN_NEEDS = tuple(sorted(CAPABILITY_OF.values()))


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


def applies(entry: Exclusion, needs: Collection[str] | None) -> bool:
    """Does ``entry`` keep an app with these needs off the endpoint? Always, but for a
    quarantine every cause of which is a capability the app does not need."""
    if needs is None or entry.layer is not Layer.quarantine or not entry.causes:
        return True
    return any(
        CAPABILITY_OF.get(cause, "") in needs or cause not in CAPABILITY_OF
        for cause in entry.causes
    )


def for_needs(publication: Publication, needs: Collection[str]) -> Publication:
    """The published list of an app with ``needs``: the quarantines it does not care about left
    out, usable counted again on what remains."""
    entries = tuple(e for e in publication.entries if applies(e, needs))
    withheld = tuple(e for e in publication.withheld if applies(e, needs))
    left = (
        None
        if publication.listing is None
        else usable(publication.listing, entries, publication.at)
    )
    return replace(publication, entries=entries, withheld=withheld, usable=left)
