"""Which endpoints an exclusion entry names: one rule, used by the floor, the published list,
the status views, the model-wide rule and the budget. Pure.

OpenRouter names endpoints by lowercase slugs. An entry matches an endpoint when it is the
endpoint's full tag (``deepinfra/fp8``), or the endpoint's base slug (``deepinfra`` matches
``deepinfra`` and every ``deepinfra/*``) unless the endpoint has a service tier: OpenRouter's
``ignore`` does not apply a base slug to service-tier endpoints. Only entries active at ``now``
count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from canary.core.model import Endpoint, Exclusion

TAG_PATTERN = r"^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9._-]+)?$"
_TAG = re.compile(TAG_PATTERN)


class InvalidTag(ValueError):
    """Not a lowercase provider slug or endpoint tag; the message says what is expected."""

    def __init__(self, tag: str) -> None:
        super().__init__(
            f"{tag[:80]!r} is not a provider slug or endpoint tag: lowercase letters, digits, "
            "'.', '_' and '-', as 'slug' or 'slug/variant' (e.g. 'deepinfra' or 'deepinfra/fp8')"
        )
        self.tag = tag


def check_tag(tag: str) -> str:
    """The tag itself when it is a lowercase slug; :class:`InvalidTag` otherwise."""
    if not _TAG.match(tag):
        raise InvalidTag(tag)
    return tag


def base_slug(tag: str) -> str:
    return tag.split("/", 1)[0]


@dataclass(frozen=True)
class Listed:
    """One endpoint of a model's latest listing: what matching needs to know of it."""

    tag: str
    service_tier: str | None = None

    @classmethod
    def of(cls, endpoint: Endpoint) -> Listed:
        return cls(endpoint.tag, endpoint.service_tier)


def matches(entry_tag: str, endpoint: Listed) -> bool:
    if entry_tag == endpoint.tag:
        return True
    return (
        "/" not in entry_tag
        and endpoint.service_tier is None
        and base_slug(endpoint.tag) == entry_tag
    )


def excluded_by(entries: Iterable[Exclusion], endpoint: Listed, now: datetime) -> list[Exclusion]:
    """The entries active at ``now`` that name ``endpoint``."""
    return [e for e in entries if e.active(now) and matches(e.tag, endpoint)]


def usable(
    listing: Sequence[Listed], entries: Sequence[Exclusion], now: datetime
) -> tuple[str, ...]:
    """The listed endpoints no active entry names, sorted: the capacity apps can route to."""
    active = [e for e in entries if e.active(now)]
    return tuple(sorted(e.tag for e in listing if not any(matches(x.tag, e) for x in active)))
