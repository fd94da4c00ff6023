"""What each span of a round's trace carries: plain dicts, built without OpenTelemetry.

Probe spans follow the OpenTelemetry GenAI semantic conventions at :data:`SEMCONV_SCHEMA`:
``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name`` (``openrouter``, the API canary
speaks), ``gen_ai.request.model``, ``gen_ai.request.max_tokens``, ``gen_ai.output.type`` (``json``
for the schema probe, the only one that asks for an output format), ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``, ``server.address``, ``server.port`` and ``error.type``; then
canary's own (``canary.provider``, ``canary.contract``, ``canary.result``, ``canary.ttft_s``,
``canary.policy_version``, ...).

Never prompt or answer text, never a key: the decision's attributes are built from contract
names, counts and reason codes only (:func:`decision_attributes`), never from an event's free
text, which quotes answers (a matched refusal pattern, a stray fragment, a schema error holding
a value).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from canary.config.probe_set import capped_max_tokens
from canary.core.events import WITH_WHY, Event, FloorHeld, QuarantineStarted, WouldQuarantine
from canary.core.model import Contract, ContractResult, Observation, iso_utc
from canary.rounds.outcome import ModelRound
from canary.rounds.prober import EndpointProbing

SEMCONV_SCHEMA = "https://opentelemetry.io/schemas/1.37.0"  # gen_ai.provider.name since 1.37
PROVIDER_NAME = "openrouter"  # the GenAI API canary speaks (gen_ai.provider.name)
OUTPUT_TYPES = {Contract.schema: "json"}  # contracts whose request asks for an output format
# A machine-readable reason code ("leading_garbage", "expired"): the only free-standing strings a
# span may carry besides names and tags. Anything else (spaces, quotes) is left out.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}")

Attribute = str | bool | int | float | list[str]
Attributes = dict[str, Attribute]


@dataclass(frozen=True)
class RequestFacts:
    """What every probe request shares, for the GenAI attributes: the API's address and port
    (``server.address``, ``server.port``) and the configured ``max_tokens`` (each request's is
    this, capped by its endpoint's own maximum)."""

    server_address: str | None = None
    server_port: int | None = None
    max_tokens: int | None = None

    @classmethod
    def of(cls, base_url: str, max_tokens: int) -> RequestFacts:
        parts = urlsplit(base_url)
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
        return cls(parts.hostname, port, max_tokens)


def round_failed(report: ModelRound) -> bool:
    """A round that did not finish cleanly: abandoned, lost, or failed after its decision."""
    return report.status != "finished" or report.error is not None


def round_attributes(report: ModelRound, policy_version: str) -> Attributes:
    """The root span's: ``canary.status`` is the round's outcome (finished, abandoned, lost);
    a failed one adds ``error.type``, a low-cardinality code (an exception's class name,
    ``lost``, ``listing_<transport>``)."""
    attributes: Attributes = {
        "gen_ai.request.model": report.model,
        "canary.round_id": report.round_id or 0,
        "canary.slot": iso_utc(report.at),
        "canary.status": report.status,
        "canary.policy_version": policy_version,
        "canary.cost_usd": report.cost_usd,
        "canary.extra": report.extra,
    }
    if round_failed(report):
        attributes["error.type"] = report.error_type or report.status
    return attributes


def endpoint_attributes(
    probing: EndpointProbing,
    report: ModelRound,
    decisions: Mapping[str, Attributes],
    policy_version: str,
) -> Attributes:
    tag = probing.endpoint.tag
    verdict = report.verdicts.get(tag)
    attributes: Attributes = {
        "canary.provider": tag,
        "gen_ai.request.model": report.model,
        "canary.policy_version": policy_version,
        "canary.verdict": verdict.verdict.value if verdict else "none",
        "canary.decision": "none",
        "canary.language": probing.language,
        **decisions.get(tag, {}),
    }
    codes = result_codes(verdict.results if verdict else ())
    if codes:
        attributes["canary.reasons"] = codes
    return attributes


def probe_attributes(
    o: Observation,
    model: str,
    result: str,
    policy_version: str,
    request: RequestFacts,
    endpoint_max_tokens: int | None = None,
) -> Attributes:
    """A probe request's span; ``endpoint_max_tokens`` caps the configured ``max_tokens`` as
    the request did (:func:`canary.config.probe_set.capped_max_tokens`)."""
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAME,
        "gen_ai.request.model": model,
        "canary.provider": o.tag,
        "canary.contract": o.contract.value,
        "canary.result": result,
        "canary.transport": o.transport.value,
        "canary.attempt": o.attempt,
        "canary.policy_version": policy_version,
    }
    max_tokens = (
        None
        if request.max_tokens is None
        else capped_max_tokens(request.max_tokens, endpoint_max_tokens)
    )
    optional: dict[str, Attribute | None] = {
        "server.address": request.server_address,
        "server.port": request.server_port if request.server_address else None,
        "gen_ai.request.max_tokens": max_tokens,
        "gen_ai.output.type": OUTPUT_TYPES.get(o.contract),
        "gen_ai.response.model": o.served_model,
        "gen_ai.response.id": o.response_id,
        "gen_ai.usage.input_tokens": o.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": o.usage.completion_tokens,
        "canary.ttft_s": o.ttft_s,
        "canary.language": o.language,
        "canary.served_by": o.served_by,
        "canary.finish_reason": o.finish_reason,
    }
    attributes.update({k: v for k, v in optional.items() if v is not None})
    if o.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [o.finish_reason]
    if not o.completed:
        attributes["error.type"] = o.transport.value if o.attribution_ok else "attribution"
    return attributes


def decisions_of(report: ModelRound) -> dict[str, Attributes]:
    """Each endpoint's decision this round as span attributes (the last one, when there were
    two)."""
    out: dict[str, Attributes] = {}
    for event in report.events:
        if event.tag is None or event.kind.value in ("verdict", "drift"):
            continue
        out[event.tag] = decision_attributes(event)
    return out


def decision_attributes(event: Event) -> Attributes:
    """``canary.decision`` and what explains it, from names, counts and codes only:
    ``canary.decision.causes`` (contract names), ``canary.decision.rounds`` (failing rounds, or
    the rounds of evidence), and ``canary.decision.reason`` composed of those
    (``"hygiene: 2 failing rounds"``) or a reason code (a release's ``expired``). An event's
    free text (``reason``, ``why``) is never copied: it quotes contract details, which quote
    answers."""
    contracts = {c.value for c in Contract}
    causes = (
        [c for c in event.causes if c in contracts]
        if isinstance(event, QuarantineStarted | WouldQuarantine | FloorHeld)
        else []
    )
    rounds = event.failing_rounds if isinstance(event, WouldQuarantine | FloorHeld) else None
    if rounds is None and event.evidence:
        rounds = len(event.evidence)
    attributes: Attributes = {"canary.decision": event.kind.value}
    reason: str | None = None
    if causes:
        attributes["canary.decision.causes"] = causes
        reason = "+".join(causes) + (f": {rounds} failing rounds" if rounds else "")
    elif isinstance(event, WITH_WHY) and _is_code(event.why):
        reason = event.why
    if rounds:
        attributes["canary.decision.rounds"] = rounds
    if reason:
        attributes["canary.decision.reason"] = reason
    return attributes


def result_codes(results: Sequence[ContractResult]) -> list[str]:
    """``contract:code`` of each result that is not a pass and carries a reason code."""
    return [
        f"{r.contract.value}:{r.reason}"
        for r in results
        if r.result.value != "pass" and _is_code(r.reason)
    ]


def _is_code(value: object) -> bool:
    return isinstance(value, str) and _CODE.fullmatch(value) is not None
