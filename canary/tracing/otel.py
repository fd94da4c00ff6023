"""The OpenTelemetry SDK side of round traces: imported only when traces are on.

The spans are written when a model's round is over (in a worker thread: the runner calls
:meth:`OtelRoundTracer.round_done` off the event loop), from what the round recorded (each probe
carries its send time and durations): tracing adds nothing to the probes' hot path, and a
2,000-endpoint round (about 16,000 spans) fits the export queue (:data:`QUEUE_SIZE`).

Stopping is bounded (:meth:`OtelRoundTracer.shutdown`): the SDK's own shutdown waits up to 30 s
for a collector that does not answer, longer than a deploy's termination grace leaves once a
round had its shutdown grace.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from canary import __version__
from canary.rounds.outcome import ModelRound
from canary.rounds.prober import EndpointProbing
from canary.service.logs import get_logger
from canary.tracing.attributes import (
    SEMCONV_SCHEMA,
    Attributes,
    RequestFacts,
    decisions_of,
    endpoint_attributes,
    probe_attributes,
    round_attributes,
    round_failed,
)

log = get_logger("canary.tracing")

QUEUE_SIZE = 32_768  # spans waiting for export: a 2,000-endpoint round is about 16,000
EXPORT_BATCH = 512
DEFAULT_SERVICE_NAME = "canary"
SHUTDOWN_TIMEOUT_S = 5.0  # the default of [otel] shutdown_timeout_s
_NS = 1_000_000_000
_UNKNOWN_SERVICE = "unknown_service"  # the SDK's service.name when nothing names one


def otlp_exporter(endpoint: str | None) -> OTLPSpanExporter:
    """OTLP over HTTP. ``[otel] endpoint`` is the collector's base URL: spans go to
    ``<endpoint>/v1/traces``. Without it the exporter reads ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
    (used as it is) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (+ ``/v1/traces``), and in every case the
    other ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, compression, certificates)."""
    return OTLPSpanExporter(
        endpoint=None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
    )


def service_resource(service_name: str | None) -> Resource:
    """``service.name``: the setting, else what the environment names (``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``; the SDK reads both), else ``canary``."""
    detected = Resource.create({SERVICE_VERSION: __version__})
    name = service_name or str(detected.attributes.get(SERVICE_NAME, ""))
    if not name or name.startswith(_UNKNOWN_SERVICE):
        name = DEFAULT_SERVICE_NAME
    return detected.merge(Resource({SERVICE_NAME: name}))


class ClosableExporter(SpanExporter):
    """The exporter behind the span processor, which a bounded shutdown can close from outside:
    closing aborts the wrapped exporter's retries, and the batches still queued are dropped
    (counted in :attr:`dropped`) instead of each waiting for a collector that does not answer."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.closed = threading.Event()
        self.dropped = 0  # written by the processor's one worker thread only

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.closed.is_set():
            self.dropped += len(spans)
            return SpanExportResult.FAILURE
        result = self.inner.export(spans)
        if result is SpanExportResult.FAILURE and self.closed.is_set():
            self.dropped += len(spans)
        return result

    def close(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            self.inner.shutdown()

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


@dataclass
class OtelRoundTracer:
    tracer: Tracer
    provider: TracerProvider
    exporter: ClosableExporter
    request: RequestFacts = field(default_factory=RequestFacts)
    shutdown_timeout_s: float = SHUTDOWN_TIMEOUT_S

    @classmethod
    def with_exporter(
        cls,
        exporter: SpanExporter,
        *,
        service_name: str | None = None,
        batch: bool = True,
        request: RequestFacts | None = None,
        shutdown_timeout_s: float = SHUTDOWN_TIMEOUT_S,
        queue_size: int = QUEUE_SIZE,
    ) -> OtelRoundTracer:
        # shutdown_on_exit=False: the SDK's exit hook would wait 30 s for an unreachable
        # collector; canary shuts the tracer down itself, within its bound
        provider = TracerProvider(resource=service_resource(service_name), shutdown_on_exit=False)
        closable = ClosableExporter(exporter)
        processor = (
            BatchSpanProcessor(
                closable, max_queue_size=queue_size, max_export_batch_size=EXPORT_BATCH
            )
            if batch
            else SimpleSpanProcessor(closable)
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("canary", __version__, schema_url=SEMCONV_SCHEMA)
        return cls(tracer, provider, closable, request or RequestFacts(), shutdown_timeout_s)

    def round_done(self, report: ModelRound, *, policy_version: str) -> None:
        """The round's trace. A round that failed (abandoned, lost, or an error after its
        decision) is traced too: its root span has status error and ``error.type``."""
        probe_times = [
            (o.started_at, o.started_at + (o.total_s or 0.0))
            for p in report.probings
            for o in p.observations
            if o.started_at is not None
        ]
        at = report.at.timestamp()
        start = min((s for s, _ in probe_times), default=at)
        end = max((e for _, e in probe_times), default=start + (report.duration_s or 0.0))
        decisions = decisions_of(report)
        root = self.tracer.start_span(
            f"canary.round {report.model}",
            start_time=_ns(start),
            attributes=round_attributes(report, policy_version),
        )
        if round_failed(report):
            root.set_status(Status(StatusCode.ERROR))
        context = trace.set_span_in_context(root)
        for probing in report.probings:
            self._endpoint(probing, report, decisions, policy_version, context)
        root.end(end_time=_ns(end))

    def _endpoint(
        self,
        probing: EndpointProbing,
        report: ModelRound,
        decisions: Mapping[str, Attributes],
        policy_version: str,
        context: Context,
    ) -> None:
        timed = [o for o in probing.observations if o.started_at is not None]
        start = min((o.started_at or 0.0 for o in timed), default=report.at.timestamp())
        end = max(((o.started_at or 0.0) + (o.total_s or 0.0) for o in timed), default=start)
        verdict = report.verdicts.get(probing.endpoint.tag)
        span = self.tracer.start_span(
            f"canary.endpoint {probing.endpoint.tag}",
            context=context,
            start_time=_ns(start),
            attributes=endpoint_attributes(probing, report, decisions, policy_version),
        )
        results = {r.contract: r.result.value for r in (verdict.results if verdict else ())}
        inner = trace.set_span_in_context(span)
        cap = probing.endpoint.max_completion_tokens
        for o in timed:
            started = o.started_at or 0.0
            probe = self.tracer.start_span(
                f"chat {report.model}",
                context=inner,
                kind=SpanKind.CLIENT,
                start_time=_ns(started),
                attributes=probe_attributes(
                    o,
                    report.model,
                    results.get(o.contract, "none"),
                    policy_version,
                    self.request,
                    cap,
                ),
            )
            if not o.completed:
                probe.set_status(Status(StatusCode.ERROR))
            probe.end(end_time=_ns(started + (o.total_s or 0.0)))
        span.end(end_time=_ns(end))

    def shutdown(self) -> None:
        """Export what is queued, for at most ``shutdown_timeout_s``: then the exporter is
        closed (its retries aborted, the rest dropped) and this returns. The SDK's shutdown runs
        on a thread of its own, a daemon that can never hold up the process's exit."""
        flusher = threading.Thread(
            target=self.provider.shutdown, name="canary-trace-shutdown", daemon=True
        )
        flusher.start()
        flusher.join(self.shutdown_timeout_s)
        if flusher.is_alive():
            self.exporter.close()
            log.warning(
                "traces_not_flushed",
                timeout_s=self.shutdown_timeout_s,
                detail="the collector did not take the queued spans in time: they are dropped",
            )


def _ns(seconds: float) -> int:
    return int(seconds * _NS)
