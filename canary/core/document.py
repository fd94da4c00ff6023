"""The published ignore-list document: what apps put into ``provider.ignore``, and what the API,
the CLI and the status page show of a model's list. Pure.

Its shape is typed here (:class:`IgnoreDocument`), so each reader names the fields it uses.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict

from canary.core.floor import Publication
from canary.core.identity import display_name
from canary.core.layers import exclusion_key, iso_utc

if TYPE_CHECKING:
    from canary.core.profiles import Profile


class DocumentEntry(TypedDict):
    """One published entry: which layer put it there, why, and for how long."""

    provider: str  # an endpoint tag or a provider slug
    name: str | None  # its display name in the latest listing (None: not listed, or several)
    layer: str  # builtin | runtime | quarantine | control | requirement
    reason: str
    since: str | None  # ISO-8601 UTC, "Z"
    until: str | None


class ProviderField(TypedDict):
    """The ``provider`` object of an OpenRouter request, ready to merge into one."""

    ignore: list[str]


class ProfileField(TypedDict):
    """The task profile a list was published for, and the hash of its settings."""

    name: str
    settings_hash: str


class IgnoreDocument(TypedDict):
    model: str
    ignore: list[str]
    provider: ProviderField
    entries: list[DocumentEntry]
    withheld: list[str]  # tags whose quarantine or requirement entries the floor held back
    capacity_floor: int
    usable_endpoints: int | None  # None before the model's first listing
    floor_breached: bool
    needs: list[str] | None  # the capabilities the list was cut for; None: the full list
    generated_at: str | None
    stale: bool
    policy_version: str
    profile: NotRequired[ProfileField]  # only on a task profile's list


def ignore_document(
    publication: Publication,
    *,
    generated_at: datetime,
    stale: bool,
    policy_version: str,
    needs: Collection[str] | None = None,
    profile: Profile | None = None,
) -> IgnoreDocument:
    """The published ignore list of one model: what apps put into ``provider.ignore``.

    ``needs``: the capabilities the list was cut for (:mod:`canary.core.needs`); None for the
    full list. ``profile``: the task profile it was published for (:mod:`canary.core.profiles`).
    Times are ISO-8601 UTC strings with a ``Z`` suffix, null when missing. ``floor_breached`` is
    true exactly when fewer listed endpoints than the capacity floor are usable even with every
    quarantine that would help withheld (``withheld`` names those). Each entry carries the
    display name of what it names in the latest listing (OpenRouter's ``provider_name``).
    """
    tags = publication.ignore
    document: IgnoreDocument = {
        "model": publication.model,
        "ignore": tags,
        "provider": {"ignore": list(tags)},
        "entries": [
            {
                "provider": e.tag,
                "name": display_name(e.tag, publication.listing),
                "layer": e.layer.value,
                "reason": e.reason,
                "since": iso_utc(e.since),
                "until": iso_utc(e.until),
            }
            for e in sorted(publication.entries, key=exclusion_key)
        ],
        "withheld": sorted({e.tag for e in publication.withheld}),
        "capacity_floor": publication.floor,
        "usable_endpoints": None if publication.usable is None else len(publication.usable),
        "floor_breached": publication.breached,
        "needs": None if needs is None else sorted(needs),
        "generated_at": iso_utc(generated_at),
        "stale": stale,
        "policy_version": policy_version,
    }
    if profile is not None:
        document["profile"] = {"name": profile.name, "settings_hash": profile.settings_hash}
    return document
