"""OpenTelemetry traces of rounds (optional: ``pip install canary[otel]``).

Each (model, slot) round is one trace: a root span for the round, a span per endpoint, and a
span per probe request under it, following the OpenTelemetry GenAI semantic conventions at
:data:`SEMCONV_SCHEMA` (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.*``) plus canary's own
attributes (``canary.provider``, ``canary.contract``, ``canary.result``, ``canary.ttft_s``,
``canary.policy_version``, the decision and its reason). Never prompt or answer text, never a key:
the decision's attributes are built from contract names, counts and reason codes only
(:func:`decision_attributes`), never from an event's free text, which quotes answers (a matched
refusal pattern, a stray fragment, a schema error holding a value).

The spans are written when a model's round is over, from what the round recorded (each probe
carries its send time and durations): tracing adds nothing to the probes' hot path, and a
2,000-endpoint round (about 16,000 spans) fits the export queue (:data:`QUEUE_SIZE`).

Nothing here imports OpenTelemetry at module level: without ``[otel]`` in the settings or an
``OTEL_EXPORTER_OTLP_*ENDPOINT`` in the environment, no trace code is imported at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

    from canary.core.model import ContractResult, Event, Observation
    from canary.prober import EndpointProbing
    from canary.runner import ModelRound
    from canary.settings import Settings

SEMCONV_SCHEMA = "https://opentelemetry.io/schemas/1.37.0"  # gen_ai.provider.name since 1.37
QUEUE_SIZE = 32_768  # spans waiting for export: a 2,000-endpoint round is about 16,000
PROVIDER_NAME = "openrouter"  # the GenAI API canary speaks (gen_ai.provider.name)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_NS = 1_000_000_000
# A machine-readable reason code ("leading_garbage", "expired"): the only free-standing strings a
# span may carry besides names and tags. Anything else (spaces, quotes) is left out.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}")


class TracingUnavailable(RuntimeError):
    """Tracing is asked for but the optional packages are not installed."""


class RoundTracer(Protocol):
    def round_done(self, report: ModelRound, *, policy_version: str) -> None: ...

    def shutdown(self) -> None: ...


def wanted(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if env is None else env
    return settings.otel.endpoint is not None or any(environ.get(v) for v in ENDPOINT_VARIABLES)


def tracer_from_settings(
    settings: Settings, env: Mapping[str, str] | None = None
) -> RoundTracer | None:
    """The OTLP/HTTP round tracer the settings ask for, or None (tracing off: the default)."""
    if not wanted(settings, env):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise TracingUnavailable(
            "traces are configured ([otel] endpoint or OTEL_EXPORTER_OTLP_*ENDPOINT) but the "
            "OpenTelemetry packages are not installed: pip install 'canary[otel]'"
        ) from None
    endpoint = settings.otel.endpoint
    exporter = OTLPSpanExporter(
        endpoint=None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
    )
    return OtelRoundTracer.with_exporter(exporter, service_name=settings.otel.service_name)


@dataclass
class OtelRoundTracer:
    tracer: Tracer
    provider: TracerProvider

    @classmethod
    def with_exporter(
        cls, exporter: SpanExporter, *, service_name: str = "canary", batch: bool = True
    ) -> OtelRoundTracer:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        from canary import __version__

        provider = TracerProvider(
            resource=Resource.create({"service.name": service_name, "service.version": __version__})
        )
        processor = (
            BatchSpanProcessor(exporter, max_queue_size=QUEUE_SIZE, max_export_batch_size=512)
            if batch
            else SimpleSpanProcessor(exporter)
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("canary", __version__, schema_url=SEMCONV_SCHEMA)
        return cls(tracer, provider)

    def round_done(self, report: ModelRound, *, policy_version: str) -> None:
        from opentelemetry import trace

        probe_times = [
            (o.started_at, o.started_at + (o.total_s or 0.0))
            for p in report.probings
            for o in p.observations
            if o.started_at is not None
        ]
        start = min((s for s, _ in probe_times), default=report.at.timestamp())
        end = max((e for _, e in probe_times), default=start)
        decisions = _decisions(report)
        root = self.tracer.start_span(
            f"canary.round {report.model}",
            start_time=_ns(start),
            attributes={
                "gen_ai.request.model": report.model,
                "canary.round_id": report.round_id or 0,
                "canary.slot": report.at.isoformat(),
                "canary.status": report.status,
                "canary.policy_version": policy_version,
                "canary.cost_usd": report.cost_usd,
                "canary.extra": report.extra,
            },
        )
        context = trace.set_span_in_context(root)
        for probing in report.probings:
            self._endpoint(probing, report, decisions, policy_version, context)
        root.end(end_time=_ns(end))

    def _endpoint(
        self,
        probing: EndpointProbing,
        report: ModelRound,
        decisions: Mapping[str, dict[str, Any]],
        policy_version: str,
        context: Any,
    ) -> None:
        from opentelemetry import trace

        tag = probing.endpoint.tag
        timed = [o for o in probing.observations if o.started_at is not None]
        start = min((o.started_at or 0.0 for o in timed), default=report.at.timestamp())
        end = max(((o.started_at or 0.0) + (o.total_s or 0.0) for o in timed), default=start)
        verdict = report.verdicts.get(tag)
        attributes: dict[str, Any] = {
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
        span = self.tracer.start_span(
            f"canary.endpoint {tag}", context=context, start_time=_ns(start), attributes=attributes
        )
        results = {r.contract: r.result.value for r in (verdict.results if verdict else ())}
        inner = trace.set_span_in_context(span)
        for o in timed:
            self._probe(o, report.model, results.get(o.contract, "none"), policy_version, inner)
        span.end(end_time=_ns(end))

    def _probe(
        self, o: Observation, model: str, result: str, policy_version: str, context: Any
    ) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        started = o.started_at or 0.0
        attributes: dict[str, Any] = {
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
        optional = {
            "gen_ai.response.model": o.served_model,
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
        span = self.tracer.start_span(
            f"chat {model}",
            context=context,
            kind=SpanKind.CLIENT,
            start_time=_ns(started),
            attributes=attributes,
        )
        if not o.completed:
            span.set_attribute(
                "error.type", o.transport.value if o.attribution_ok else "attribution"
            )
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=_ns(started + (o.total_s or 0.0)))

    def shutdown(self) -> None:
        self.provider.shutdown()


def _decisions(report: ModelRound) -> dict[str, dict[str, Any]]:
    """Each endpoint's decision this round as span attributes (the last one, when there were
    two)."""
    out: dict[str, dict[str, Any]] = {}
    for event in report.events:
        if event.tag is None or event.kind.value in ("verdict", "drift"):
            continue
        out[event.tag] = decision_attributes(event)
    return out


def decision_attributes(event: Event) -> dict[str, Any]:
    """``canary.decision`` and what explains it, from names, counts and codes only:
    ``canary.decision.causes`` (contract names), ``canary.decision.rounds`` (failing rounds, or
    the rounds of evidence), and ``canary.decision.reason`` composed of those
    (``"hygiene: 2 failing rounds"``) or a reason code (a release's ``expired``). An event's
    free text (``reason``, ``why``) is never copied: it quotes contract details, which quote
    answers."""
    from canary.core.model import Contract

    detail = event.detail
    contracts = {c.value for c in Contract}
    raw_causes = detail.get("causes")
    causes = [
        c for c in (raw_causes if isinstance(raw_causes, list | tuple) else ()) if c in contracts
    ]
    failing = detail.get("failing_rounds")
    rounds = failing if isinstance(failing, int) and not isinstance(failing, bool) else None
    if rounds is None and event.evidence:
        rounds = len(event.evidence)
    attributes: dict[str, Any] = {"canary.decision": event.kind.value}
    reason: str | None = None
    if causes:
        attributes["canary.decision.causes"] = causes
        reason = "+".join(causes) + (f": {rounds} failing rounds" if rounds else "")
    elif _is_code(detail.get("why")):
        reason = str(detail["why"])
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


def _ns(seconds: float) -> int:
    return int(seconds * _NS)
