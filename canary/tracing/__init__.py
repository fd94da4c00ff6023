"""OpenTelemetry traces of rounds (optional: ``pip install canary[otel]``).

Each (model, slot) round is one trace: a root span for the round, a span per endpoint, and a
span per probe request under it (:mod:`canary.tracing.attributes` says what each carries; never
prompt or answer text, never a key). A round that failed, was abandoned or was lost is traced
too, its root span marked as an error.

When traces are on, and how they end:

- An explicit ``[otel] endpoint`` in canary's settings turns them on; without the packages it
  is a start-up error (:class:`TracingUnavailable`): the operator asked for traces.
- An ambient ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (a platform
  may inject one into every pod) turns them on too; without the packages canary logs one
  warning (``traces_unavailable``) and runs without traces.
- ``OTEL_SDK_DISABLED=true`` turns them off, whatever else is set.
- The service name is ``[otel] service_name`` when set, else ``OTEL_SERVICE_NAME`` (or a
  ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``), else ``canary``.
- Stopping flushes the queued spans for at most ``[otel] shutdown_timeout_s``; what a collector
  that does not answer by then has not taken is dropped, so a stop stays inside the deploy's
  termination grace.

This package imports no OpenTelemetry code itself: :mod:`canary.tracing.otel` does, and it is
imported only when traces are on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

from canary.config.settings import Settings
from canary.rounds.outcome import ModelRound
from canary.service.logs import get_logger

log = get_logger("canary.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DISABLED_VARIABLE = "OTEL_SDK_DISABLED"
INSTALL_HINT = "pip install 'canary[otel]'"
# What building spans can raise: the SDK raises TypeError, ValueError and RuntimeError on a span
# it cannot take (a bad parent, an end without a start, a bad setting), and a malformed record
# gives the same. The runner logs these and the round is unaffected.
TRACING_ERRORS: tuple[type[Exception], ...] = (TypeError, ValueError, RuntimeError)


class TracingUnavailable(RuntimeError):
    """Traces are configured in canary's settings but the optional packages are not installed."""


class RoundTracer(Protocol):
    def round_done(self, report: ModelRound, *, policy_version: str) -> None:
        """Write the trace of one model's round, whatever its outcome."""

    def shutdown(self) -> None:
        """Flush the queued spans (within a bound) and stop."""


def disabled(env: Mapping[str, str]) -> bool:
    return env.get(DISABLED_VARIABLE, "").strip().lower() == "true"


def ambient_variable(env: Mapping[str, str]) -> str | None:
    """The ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable set in the environment, if any."""
    return next((v for v in ENDPOINT_VARIABLES if env.get(v)), None)


def wanted(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if env is None else env
    if disabled(environ):
        return False
    return settings.otel.endpoint is not None or ambient_variable(environ) is not None


def tracer_from_settings(
    settings: Settings, env: Mapping[str, str] | None = None
) -> RoundTracer | None:
    """The OTLP/HTTP round tracer the settings and the environment ask for, or None (off: the
    default). Raises :class:`TracingUnavailable` when ``[otel] endpoint`` is set and the
    packages are missing; an ambient variable alone only logs a warning then."""
    environ = os.environ if env is None else env
    if not wanted(settings, environ):
        return None
    try:
        from canary.tracing.attributes import RequestFacts
        from canary.tracing.otel import OtelRoundTracer, otlp_exporter
    except ImportError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        if settings.otel.endpoint is not None:
            raise TracingUnavailable(
                "traces are configured ([otel] endpoint) but the OpenTelemetry packages are "
                f"not installed: {INSTALL_HINT}"
            ) from None
        log.warning(
            "traces_unavailable",
            variable=ambient_variable(environ),
            detail=f"the OpenTelemetry packages are not installed ({INSTALL_HINT}): "
            "running without traces",
        )
        return None
    otel = settings.otel
    return OtelRoundTracer.with_exporter(
        otlp_exporter(otel.endpoint),
        service_name=otel.service_name,
        request=RequestFacts.of(settings.openrouter.base_url, settings.openrouter.max_tokens),
        shutdown_timeout_s=otel.shutdown_timeout_s,
    )
