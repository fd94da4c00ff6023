"""How traces are turned on and where they go: ``[otel] endpoint`` and the OTEL_* variables
against a real OTLP/HTTP collector on 127.0.0.1, the service name, the request facts, and a
shutdown bounded when the collector is unreachable."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")  # the optional extra (installed by `make test`)

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from structlog.testing import capture_logs  # noqa: E402
from trace_kit import collector, span_count, synthetic_round  # noqa: E402

from canary.config.settings import Settings  # noqa: E402
from canary.service.logs import configure_logging  # noqa: E402
from canary.service.ports import free_port  # noqa: E402
from canary.tracing import tracer_from_settings, wanted  # noqa: E402
from canary.tracing.attributes import RequestFacts  # noqa: E402
from canary.tracing.otel import OtelRoundTracer, otlp_exporter  # noqa: E402

POLICY = "p-test"


@pytest.fixture(autouse=True)
def _no_ambient_otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test sets the OTEL_* variables it means; none leaks in from the machine. Logging is
    set up first, so capture_logs sees what the first line logged."""
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    configure_logging()
    yield


def export_requests(bodies: list[bytes]) -> list[ExportTraceServiceRequest]:
    out = []
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        out.append(request)
    return out


def spans_in(requests: list[ExportTraceServiceRequest]) -> int:
    return sum(len(s.spans) for r in requests for rs in r.resource_spans for s in rs.scope_spans)


def service_names(requests: list[ExportTraceServiceRequest]) -> set[str]:
    return {
        a.value.string_value
        for r in requests
        for rs in r.resource_spans
        for a in rs.resource.attributes
        if a.key == "service.name"
    }


@pytest.mark.parametrize(
    ("endpoint", "env", "expected"),
    [
        (None, {}, False),
        ("http://collector:4318", {}, True),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ("http://collector:4318", {"OTEL_SDK_DISABLED": "true"}, False),
        (
            None,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"},
            False,
        ),
        ("http://collector:4318", {"OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_when_traces_are_on(endpoint: str | None, env: dict[str, str], expected: bool) -> None:
    assert wanted(Settings(otel={"endpoint": endpoint}), env=env) is expected


def test_otel_sdk_disabled_means_no_tracer_at_all() -> None:
    settings = Settings(otel={"endpoint": "http://collector:4318"})
    assert tracer_from_settings(settings, env={"OTEL_SDK_DISABLED": "true"}) is None


def test_the_otel_endpoint_setting_sends_spans_to_its_v1_traces() -> None:
    with collector() as c:
        tracer = tracer_from_settings(Settings(otel={"endpoint": c.url + "/"}))
        assert tracer is not None
        tracer.round_done(synthetic_round(3), policy_version=POLICY)
        tracer.shutdown()
    assert {r.path for r in c.received} == {"/v1/traces"}
    requests = export_requests([r.body for r in c.received])
    assert spans_in(requests) == span_count(3)
    assert service_names(requests) == {"canary"}


def test_the_otlp_variables_are_handed_to_the_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    with collector() as c:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.url + "/gateway")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=canary-test")
        tracer = tracer_from_settings(Settings())  # no [otel]: the environment alone
        assert tracer is not None
        tracer.round_done(synthetic_round(1), policy_version=POLICY)
        tracer.shutdown()
    assert [r.path for r in c.received] == ["/gateway/v1/traces"]
    assert c.received[0].headers["x-tenant"] == "canary-test"


def test_a_traces_endpoint_variable_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    with collector() as c:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.url + "/custom/spans")
        tracer = tracer_from_settings(Settings())
        assert tracer is not None
        tracer.round_done(synthetic_round(1), policy_version=POLICY)
        tracer.shutdown()
    assert [r.path for r in c.received] == ["/custom/spans"]


@pytest.mark.parametrize(
    ("configured", "env", "expected"),
    [
        (None, {}, "canary"),
        (None, {"OTEL_SERVICE_NAME": "canary-eu"}, "canary-eu"),
        (None, {"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-resource"}, "from-resource"),
        ("canary-settings", {"OTEL_SERVICE_NAME": "canary-eu"}, "canary-settings"),
    ],
)
def test_the_service_name(
    monkeypatch: pytest.MonkeyPatch, configured: str | None, env: dict[str, str], expected: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    exporter = InMemorySpanExporter()
    tracer = OtelRoundTracer.with_exporter(exporter, service_name=configured, batch=False)
    tracer.round_done(synthetic_round(1), policy_version=POLICY)
    tracer.shutdown()
    names = {s.resource.attributes["service.name"] for s in exporter.get_finished_spans()}
    assert names == {expected}


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://openrouter.ai/api/v1", RequestFacts("openrouter.ai", 443, 400)),
        ("http://127.0.0.1:8765/api/v1", RequestFacts("127.0.0.1", 8765, 400)),
        ("http://sim.internal/api/v1", RequestFacts("sim.internal", 80, 400)),
    ],
)
def test_request_facts_come_from_the_openrouter_url(base_url: str, expected: RequestFacts) -> None:
    assert RequestFacts.of(base_url, 400) == expected


def test_shutdown_with_an_unreachable_collector_returns_within_its_bound() -> None:
    # Nothing listens on the port: every export is refused and retried with backoff for the
    # exporter's 10 s timeout; unbounded, the SDK's shutdown would wait up to 30 s.
    unreachable = f"http://127.0.0.1:{free_port()}"
    tracer = OtelRoundTracer.with_exporter(otlp_exporter(unreachable), shutdown_timeout_s=0.2)
    tracer.round_done(synthetic_round(200), policy_version=POLICY)  # 1,601 spans: 4 batches
    with capture_logs() as logs:
        tracer.shutdown()
    # logged only when the flush was still running at the bound, and shutdown returned then
    [warning] = [e for e in logs if e["event"] == "traces_not_flushed"]
    assert warning["timeout_s"] == 0.2
    assert tracer.exporter.closed.is_set()


def test_shutdown_with_a_collector_that_answers_exports_everything_first() -> None:
    with collector() as c:
        tracer = OtelRoundTracer.with_exporter(otlp_exporter(c.url), shutdown_timeout_s=5)
        tracer.round_done(synthetic_round(200), policy_version=POLICY)
        with capture_logs() as logs:
            tracer.shutdown()
    assert spans_in(export_requests([r.body for r in c.received])) == span_count(200)
    assert not [e for e in logs if e["event"] == "traces_not_flushed"]
    assert tracer.exporter.dropped == 0


def test_a_request_max_tokens_is_capped_by_its_endpoint_as_the_probe_was() -> None:
    exporter = InMemorySpanExporter()
    facts = RequestFacts("openrouter.test", 443, 400)
    tracer = OtelRoundTracer.with_exporter(exporter, batch=False, request=facts)
    tracer.round_done(synthetic_round(1), policy_version=POLICY)  # the endpoint's cap: 256
    tracer.shutdown()
    probes = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert probes and {p.attributes["gen_ai.request.max_tokens"] for p in probes} == {256}
