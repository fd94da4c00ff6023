"""Which endpoints an exclusion entry names: one rule, used by the floor, the published list,
the status views, the model-wide rule and the budget. Pure.

OpenRouter names endpoints by lowercase slugs. An entry matches an endpoint when it is the
endpoint's full tag (``deepinfra/fp8``), or the endpoint's base slug (``deepinfra`` matches
``deepinfra`` and every ``deepinfra/*``) unless the endpoint has a service tier: OpenRouter's
``ignore`` does not apply a base slug to service-tier endpoints. A positive control's entry
(layer ``control``) names its exact tag only: it is never widened to a base slug. Only entries
active at ``now`` count.

A listed endpoint also carries the capabilities it advertises among those a list can be cut for
(``needs=``): ``structured_outputs`` (its ``supported_parameters`` say json_schema works;
``response_format`` alone may be JSON mode only) and ``tools``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from canary.core.model import Endpoint, Exclusion, Layer, Pricing

TAG_PATTERN = r"^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9._-]+)?$"
# What a list can be cut for, as OpenRouter's supported_parameters names each capability.
CAPABILITIES = ("structured_outputs", "tools")
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
    """One endpoint of a model's latest listing: what matching and the needs lists need to know
    of it."""

    tag: str
    service_tier: str | None = None
    capabilities: frozenset[str] = frozenset()  # the CAPABILITIES it advertises
    # OpenRouter's display name (``provider_name``): what its answers call the provider. Shown
    # beside the tag; never part of matching.
    name: str | None = field(default=None, compare=False)
    # What a task profile holds it to (canary.core.profiles); never part of matching.
    context_length: int | None = field(default=None, compare=False)
    pricing: Pricing | None = field(default=None, compare=False)  # USD per token
    quantization: str | None = field(default=None, compare=False)

    @classmethod
    def of(cls, endpoint: Endpoint) -> Listed:
        return cls(
            endpoint.tag,
            endpoint.service_tier,
            capabilities_of(endpoint.supported_parameters),
            endpoint.provider_name or None,
            endpoint.context_length,
            endpoint.pricing,
            endpoint.quantization,
        )

    def serves(self, needs: Iterable[str]) -> bool:
        """Does it advertise every one of ``needs``?"""
        return all(need in self.capabilities for need in needs)


def capabilities_of(supported_parameters: Iterable[str] | None) -> frozenset[str]:
    """The CAPABILITIES among an endpoint's supported parameters."""
    return frozenset(p for p in supported_parameters or () if p in CAPABILITIES)


def matches(entry_tag: str, endpoint: Listed) -> bool:
    if entry_tag == endpoint.tag:
        return True
    return (
        "/" not in entry_tag
        and endpoint.service_tier is None
        and base_slug(endpoint.tag) == entry_tag
    )


def display_name(entry_tag: str, listing: Iterable[Listed] | None) -> str | None:
    """The display name of what an entry names in ``listing``: the name of the endpoint of that
    tag, or the one name every endpoint a provider slug matches shares (None when they differ,
    or when nothing listed carries a name)."""
    found = {e.name for e in listing or () if matches(entry_tag, e)}
    return found.pop() if len(found) == 1 else None


def names(entry: Exclusion, endpoint: Listed) -> bool:
    """Does ``entry`` name ``endpoint``? A control's entry names its exact tag only."""
    if entry.layer is Layer.control:
        return entry.tag == endpoint.tag
    return matches(entry.tag, endpoint)


def excluded_by(entries: Iterable[Exclusion], endpoint: Listed, now: datetime) -> list[Exclusion]:
    """The entries active at ``now`` that name ``endpoint``."""
    return [e for e in entries if e.active(now) and names(e, endpoint)]


def named_tags(
    entries: Iterable[Exclusion], listing: Iterable[Listed], now: datetime
) -> frozenset[str]:
    """The listed endpoints that an entry active at ``now`` names."""
    return frozenset(e.tag for e in listing if excluded_by(entries, e, now))


def usable(
    listing: Sequence[Listed], entries: Sequence[Exclusion], now: datetime
) -> tuple[str, ...]:
    """The listed endpoints no active entry names, sorted: the capacity apps can route to."""
    active = [e for e in entries if e.active(now)]
    return tuple(sorted(e.tag for e in listing if not any(names(x, e) for x in active)))
