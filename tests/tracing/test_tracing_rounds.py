"""Every outcome of a model's round is traced (finished, abandoned, lost), off the event loop,
and a tracer that breaks never fails the round."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")  # the optional extra (installed by `make test`)

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402
from sqlite_template import migrated_sqlite
from structlog.testing import capture_logs  # noqa: E402

from canary.config.settings import ModelSettings, OpenRouterSettings, Settings  # noqa: E402
from canary.openrouter.client import OpenRouterClient  # noqa: E402
from canary.rounds.drill import SIM_KEY  # noqa: E402
from canary.rounds.outcome import ModelRound
from canary.rounds.runner import RoundRunner  # noqa: E402
from canary.rounds.wiring import build_wiring  # noqa: E402
from canary.service.logs import configure_logging  # noqa: E402
from canary.sim.server import start_simulator  # noqa: E402
from canary.store._claims import RoundLost  # noqa: E402
from canary.store.repository import Store  # noqa: E402
from canary.tracing import RoundTracer  # noqa: E402
from canary.tracing.otel import OtelRoundTracer  # noqa: E402

MODEL = "acme/traced-rounds"
AT = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
LISTING_DEADLINE_S = 0.5
FLEET = {
    "seed": 5,
    "models": [
        {
            "id": MODEL,
            "providers": [
                {"tag": t, "ttft_ms": 5, "tokens_per_second": 50000, "faults": []}
                for t in ("alpha", "bravo")
            ],
        }
    ],
}


class StoreGoneAway(RuntimeError):
    pass


class FailingStore(Store):
    """A real store whose record_verdicts raises ``error``."""

    def __init__(self, url: str, error: Exception) -> None:
        super().__init__(url)
        self.error = error

    def record_verdicts(self, *args: object, **kwargs: object) -> None:
        raise self.error


class BrokenTracer:
    """A tracer with a bug: it raises what a malformed span raises in the SDK."""

    def __init__(self) -> None:
        self.calls = 0

    def round_done(self, report: ModelRound, *, policy_version: str) -> None:
        self.calls += 1
        raise TypeError("an attribute of an unexpected type")

    def shutdown(self) -> None:
        pass


@dataclass
class ThreadOf:
    """A tracer that notes which thread built the trace."""

    thread: int | None = None

    def round_done(self, report: ModelRound, *, policy_version: str) -> None:
        self.thread = threading.get_ident()

    def shutdown(self) -> None:
        pass


def one_round(
    tmp_path: Path, tracer: RoundTracer, store: Store | None = None, model: str = MODEL
) -> tuple[ModelRound, int]:
    """One round of ``model`` against the fleet; the report and the event loop's thread."""
    url = store.url if store is not None else migrated_sqlite(tmp_path / "rounds.db")

    async def run() -> tuple[ModelRound, int]:
        with start_simulator(FLEET, detector=False) as sim:
            settings = Settings(
                database_url=url,
                languages=("en",),
                models=(ModelSettings(id=model),),
                openrouter=OpenRouterSettings(base_url=sim.base_url),
            )
            wiring = build_wiring(settings, store=store or Store(url))
            try:
                # a short listing deadline: a listing that fails is retried until it runs out
                async with OpenRouterClient(
                    sim.base_url, SIM_KEY, listing_deadline_s=LISTING_DEADLINE_S
                ) as client:
                    runner = RoundRunner(wiring, client, clock=lambda: AT, tracer=tracer)
                    (report,) = await runner.run(AT)
            finally:
                wiring.store.dispose()
        return report, threading.get_ident()

    return asyncio.run(run())


def traced(
    tmp_path: Path, store: Store | None = None, model: str = MODEL
) -> tuple[ModelRound, list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    tracer = OtelRoundTracer.with_exporter(exporter, batch=False)
    report, _ = one_round(tmp_path, tracer, store, model)
    tracer.shutdown()
    return report, list(exporter.get_finished_spans())


def root_of(spans: list[ReadableSpan], model: str = MODEL) -> ReadableSpan:
    (root,) = [s for s in spans if s.name == f"canary.round {model}"]
    return root


def test_a_finished_round_has_an_unset_status_and_no_error_type(tmp_path: Path) -> None:
    report, spans = traced(tmp_path)
    assert report.status == "finished" and report.error is None
    root = root_of(spans)
    assert root.status.status_code is StatusCode.UNSET
    assert root.attributes["canary.status"] == "finished"
    assert "error.type" not in root.attributes


def test_an_abandoned_round_is_traced_as_an_error_with_its_outcome(tmp_path: Path) -> None:
    url = migrated_sqlite(tmp_path / "rounds.db")
    report, spans = traced(tmp_path, FailingStore(url, StoreGoneAway("connection lost")))
    assert report.status == "abandoned" and report.error is not None
    root = root_of(spans)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["canary.status"] == "abandoned"
    assert root.attributes["error.type"] == "StoreGoneAway"
    # what it probed before it failed is in the trace too; the error's message is not
    endpoints = [s for s in spans if s.name.startswith("canary.endpoint ")]
    assert sorted(s.attributes["canary.provider"] for s in endpoints) == ["alpha", "bravo"]
    assert all("connection lost" not in str(dict(s.attributes or {})) for s in spans)
    assert root.end_time is not None and root.start_time is not None
    assert root.end_time >= root.start_time


def test_a_lost_round_is_traced_as_an_error_with_its_outcome(tmp_path: Path) -> None:
    url = migrated_sqlite(tmp_path / "rounds.db")
    report, spans = traced(tmp_path, FailingStore(url, RoundLost(1, "someone-else")))
    assert report.status == "lost"
    root = root_of(spans)
    assert root.status.status_code is StatusCode.ERROR
    assert (root.attributes["canary.status"], root.attributes["error.type"]) == ("lost", "lost")


def test_a_round_whose_listing_failed_is_traced_as_an_error(tmp_path: Path) -> None:
    absent = "acme/not-served"  # the simulator lists no endpoints for it
    report, spans = traced(tmp_path, model=absent)
    assert report.status == "abandoned"
    root = root_of(spans, absent)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["canary.status"] == "abandoned"
    assert str(root.attributes["error.type"]).startswith("listing_"), root.attributes
    assert [s.name for s in spans] == [root.name]  # nothing was probed


def test_the_trace_is_built_off_the_event_loop(tmp_path: Path) -> None:
    tracer = ThreadOf()
    report, loop_thread = one_round(tmp_path, tracer)
    assert report.status == "finished"
    assert tracer.thread is not None and tracer.thread != loop_thread


def test_a_tracer_that_raises_never_fails_the_round(tmp_path: Path) -> None:
    tracer = BrokenTracer()
    configure_logging()  # set up first, so capture_logs sees every line
    with capture_logs() as logs:
        report, _ = one_round(tmp_path, tracer)
    assert tracer.calls == 1
    assert report.status == "finished" and report.error is None and report.decided
    [failed] = [e for e in logs if e["event"] == "trace_failed"]
    assert failed["model"] == MODEL and "TypeError" in failed["error"]
