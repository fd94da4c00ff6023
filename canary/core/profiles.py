"""Task profiles: one list for each job an app does. Pure.

A profile names what a task requires of an endpoint. Each listed endpoint that misses a
requirement gets one entry of layer ``requirement`` per requirement missed, naming it and the
measured value. Requirements:

- ``needs``: the endpoint advertises every capability (and, as a plain ``needs=``, a quarantine
  caused only by capabilities the task does not need does not apply);
- ``max_ttft_p95_s``: canary's own p95 time to first token over the last 24 h, judged only
  with at least :data:`MIN_SAMPLES` samples (fewer never exclude);
- ``min_context_length``; ``max_price`` (prompt and completion, USD per million tokens);
- ``min_quantization`` in the settings' order, lowest first; a quantization that is missing,
  ``unknown`` or not in the order is excluded only with ``unknown_quantization = "exclude"``;
- ``max_error_rate``: the share of the last 24 h's probes that ended in a 5xx, a timeout or a
  disconnect, judged only with at least :data:`MIN_SAMPLES` probes (401/403/429 and our own
  bad requests are in neither count).

A figure that is not known (no context length or price listed) never excludes. Requirement
entries are preferences: the floor withholds them first (:func:`canary.core.floor.publish`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from canary.core.controls import Controls
from canary.core.drift import below_floor, per_million
from canary.core.floor import Publication
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer
from canary.core.needs import publish_for_needs

MIN_SAMPLES = 20  # samples (p95) or probes (error rate) below which a figure never excludes


@dataclass(frozen=True)
class Measured:
    """One endpoint's own figures over the last 24 h."""

    ttft_p95_s: float | None = None
    ttft_samples: int = 0
    errors: int = 0  # probes that ended in a 5xx, a timeout or a disconnect
    probes: int = 0  # probes that reached a verdict on the wire (errors included)


@dataclass(frozen=True)
class Profile:
    """A task's requirements, as ``[[profiles]]`` sets them (``None``: not required)."""

    name: str
    models: tuple[str, ...] = ()  # the models it covers; empty: every model
    needs: frozenset[str] = frozenset()
    max_ttft_p95_s: float | None = None
    min_context_length: int | None = None
    max_price_prompt: float | None = None  # USD per million tokens
    max_price_completion: float | None = None
    min_quantization: str | None = None
    unknown_quantization: Literal["allow", "exclude"] = "allow"
    max_error_rate: float | None = None
    quantization_order: tuple[str, ...] = ()  # lowest first
    settings_hash: str = ""  # of its settings: the document names it

    def covers(self, model: str) -> bool:
        return not self.models or model in self.models


class UnknownProfile(LookupError):
    """No profile of that name covers the model; the message names the ones that do."""

    def __init__(self, name: str, model: str, known: Collection[str]) -> None:
        self.known = tuple(sorted(known))
        super().__init__(
            f"unknown profile {name!r} for {model} (known: {', '.join(self.known) or 'none'})"
        )


def misses(profile: Profile, endpoint: Listed, measured: Measured | None) -> list[tuple[str, str]]:
    """The requirements ``endpoint`` misses, each as (requirement, what was measured)."""
    found: list[tuple[str, str]] = []
    m = measured or Measured()
    lacking = sorted(profile.needs - endpoint.capabilities)
    if lacking:
        found.append(("needs", f"{', '.join(lacking)} not advertised"))
    bound, p95, n = profile.max_ttft_p95_s, m.ttft_p95_s, m.ttft_samples
    if bound is not None and p95 is not None and n >= MIN_SAMPLES and p95 > bound:
        found.append(
            ("max_ttft_p95_s", f"p95 ttft {p95:.1f} s > {bound:g} s over 24 h, {n} samples")
        )
    least, context = profile.min_context_length, endpoint.context_length
    if least is not None and context is not None and context < least:
        found.append(("min_context_length", f"context length {context} < {least}"))
    price = endpoint.pricing
    caps = {"prompt": profile.max_price_prompt, "completion": profile.max_price_completion}
    for side, cap in caps.items():
        priced = None if price is None else per_million(getattr(price, side))
        if cap is not None and priced is not None and priced > cap:
            found.append(("max_price", f"{side} price {priced:g} > {cap:g} USD/M tokens"))
    floor, order = profile.min_quantization, profile.quantization_order
    quantization = endpoint.quantization
    below = below_floor(quantization, floor, order)
    if below:
        found.append(("min_quantization", f"{quantization} below {floor}"))
    elif below is None and floor in order and profile.unknown_quantization == "exclude":
        found.append(("min_quantization", f"quantization {quantization or 'unknown'}"))
    rate, share = profile.max_error_rate, m.errors / m.probes if m.probes else 0.0
    if rate is not None and m.probes >= MIN_SAMPLES and share > rate:
        failed = f"{m.errors} of {m.probes} probes failed (5xx, timeout, disconnect)"
        found.append(("max_error_rate", f"{failed} = {share:.1%} > {rate:.1%} over 24 h"))
    return found


def requirement_entries(
    model: str,
    profile: Profile,
    listing: Sequence[Listed] | None,
    measured: Mapping[str, Measured],
) -> tuple[Exclusion, ...]:
    """One ``requirement`` entry per listed endpoint and requirement it misses."""
    return tuple(
        Exclusion(model, e.tag, Layer.requirement, f"{name}: {detail}", causes=(name,))
        for e in listing or ()
        for name, detail in misses(profile, e, measured.get(e.tag))
    )


def publish_for_profile(
    model: str,
    listing: Sequence[Listed] | None,
    builtin: Sequence[Exclusion],
    runtime: Sequence[Exclusion],
    quarantines: Sequence[Exclusion],
    *,
    profile: Profile,
    extra_needs: Collection[str],
    measured: Mapping[str, Measured],
    floor: int,
    now: datetime,
    controls: Controls,
) -> Publication:
    """The list of ``profile`` for ``model``: the core's :func:`publish` with the requirement
    entries, cut for the profile's needs and ``extra_needs`` as a ``needs=`` list is (none: every
    quarantine applies), its capacity the endpoints that advertise them all."""
    profile = replace(profile, needs=profile.needs | frozenset(extra_needs))
    return publish_for_needs(
        model, listing, builtin, runtime, quarantines, needs=profile.needs, floor=floor, now=now,
        controls=controls, requirements=requirement_entries(model, profile, listing, measured),
    )  # fmt: skip
