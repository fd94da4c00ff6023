"""A 2,000-endpoint round (16,001 spans) goes through the batch processor without a drop, even
when the collector takes nothing until the whole round is written."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

pytest.importorskip("opentelemetry.sdk")  # the optional extra (installed by `make test`)
pytestmark = pytest.mark.slow  # rounds of 2,000 endpoints (16,001 spans): seconds of CPU

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult  # noqa: E402
from trace_kit import MODEL, span_count, synthetic_round  # noqa: E402

from canary.tracing.otel import QUEUE_SIZE, OtelRoundTracer  # noqa: E402

ENDPOINTS = 2_000
SDK_DEFAULT_QUEUE = 2_048


class GatedExporter(SpanExporter):
    """An in-memory collector that takes nothing until its gate opens: the worst case for the
    queue, a round written faster than any batch is exported."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.gate.wait()
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.gate.set()


def export_a_big_round(queue_size: int) -> list[ReadableSpan]:
    exporter = GatedExporter()
    tracer = OtelRoundTracer.with_exporter(exporter, queue_size=queue_size, shutdown_timeout_s=60)
    tracer.round_done(synthetic_round(ENDPOINTS), policy_version="p-volume")
    exporter.gate.set()  # the collector answers once the round is written
    tracer.shutdown()
    assert tracer.exporter.dropped == 0
    return exporter.spans


def test_a_2000_endpoint_round_is_exported_whole() -> None:
    spans = export_a_big_round(QUEUE_SIZE)
    assert len(spans) == span_count(ENDPOINTS) == 16_001
    assert len({s.context.span_id for s in spans}) == len(spans)
    assert sum(s.name == f"chat {MODEL}" for s in spans) == ENDPOINTS * 7


def test_the_sdk_default_queue_would_drop_most_of_it() -> None:
    # what the queue size buys: with the SDK's default the same round loses spans
    assert len(export_a_big_round(SDK_DEFAULT_QUEUE)) < span_count(ENDPOINTS)
