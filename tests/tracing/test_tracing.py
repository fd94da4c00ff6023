"""Traces of a drill round through the SDK's in-memory exporter; and no trace code without it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")  # the optional extra (installed by `make test`)

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from canary.config.settings import ModelSettings, Settings  # noqa: E402
from canary.rounds.drill import DrillResult, run_drill  # noqa: E402
from canary.tracing.attributes import (
    SEMCONV_SCHEMA,  # noqa: E402
    RequestFacts,  # noqa: E402
)
from canary.tracing.otel import OtelRoundTracer  # noqa: E402

MODEL = "acme/traced-1"
SECRET = "sk-or-trace-secret"
TAGS = ("alpha", "bravo", "charlie")
# bravo's stray prefix: a distinctive fragment of its answers, which its hygiene detail (and so
# its quarantine's reason) quotes
FRAGMENT = "zorblaxian"
OTHER_MODEL = "other/model-9"  # what charlie's answers report
FACTS = RequestFacts("openrouter.test", 443, 400)


def _scenario() -> dict[str, object]:
    def provider(tag: str, *faults: dict[str, object]) -> dict[str, object]:
        return {"tag": tag, "ttft_ms": 5, "tokens_per_second": 50000, "faults": list(faults)}

    return {
        "seed": 3,
        "models": [
            {
                "id": MODEL,
                "providers": [
                    provider("alpha"),
                    provider("bravo", {"kind": "garbage_prefix"}),
                    provider("charlie", {"kind": "served_model", "id": OTHER_MODEL}),
                ],
            }
        ],
    }


@dataclass(frozen=True)
class Traced:
    spans: list[ReadableSpan]
    drill: DrillResult


@pytest.fixture(scope="module")
def traced() -> Traced:
    exporter = InMemorySpanExporter()
    tracer = OtelRoundTracer.with_exporter(exporter, batch=False, request=FACTS)
    settings = Settings(languages=("en",), models=(ModelSettings(id=MODEL),))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("canary.sim.answers.GARBAGE", (FRAGMENT,))
        drill = asyncio.run(run_drill(_scenario(), 2, settings, mode="enforce", tracer=tracer))
    tracer.shutdown()
    return Traced(list(exporter.get_finished_spans()), drill)


@pytest.fixture(scope="module")
def spans(traced: Traced) -> list[ReadableSpan]:
    return traced.spans


def _of(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def test_each_round_is_a_trace_with_a_span_per_endpoint_and_per_probe(
    spans: list[ReadableSpan],
) -> None:
    rounds = _of(spans, "canary.round ")
    assert len(rounds) == 2 and len({r.context.trace_id for r in rounds}) == 2
    for root in rounds:
        trace = [s for s in spans if s.context.trace_id == root.context.trace_id]
        endpoints = _of(trace, "canary.endpoint ")
        assert sorted(e.attributes["canary.provider"] for e in endpoints) == list(TAGS)
        assert all(
            e.parent is not None and e.parent.span_id == root.context.span_id for e in endpoints
        )
        for endpoint in endpoints:
            probes = [
                s
                for s in trace
                if s.parent is not None and s.parent.span_id == endpoint.context.span_id
            ]
            assert len(probes) >= 4  # ttft samples, refusal, language (+ schema, tools)
            assert all(p.name == f"chat {MODEL}" for p in probes)
            assert all(
                endpoint.start_time <= p.start_time <= p.end_time <= endpoint.end_time
                for p in probes
            )
        assert root.start_time <= min(e.start_time for e in endpoints)
        assert root.instrumentation_scope.schema_url == SEMCONV_SCHEMA


def test_probe_spans_carry_the_genai_and_canary_attributes(spans: list[ReadableSpan]) -> None:
    probes = _of(spans, "chat ")
    assert probes
    for p in probes:
        a = p.attributes
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openrouter"
        assert a["gen_ai.request.model"] == MODEL and a["canary.provider"] in TAGS
        assert a["canary.contract"] in {"ttft", "refusal", "schema", "language", "tools"}
        assert a["canary.result"] in {
            "pass",
            "fail",
            "inconclusive",
            "transport_error",
            "not_applicable",
            "none",
        }
        assert a["canary.policy_version"].startswith("p-")
    completed = [p for p in probes if p.attributes["canary.transport"] == "ok"]
    assert any("canary.ttft_s" in p.attributes for p in completed)
    assert any("gen_ai.usage.output_tokens" in p.attributes for p in completed)
    for p in probes:
        a = p.attributes
        assert (a["server.address"], a["server.port"]) == ("openrouter.test", 443)
        assert a["gen_ai.request.max_tokens"] == 400
        # json for the schema probe, the only request that asks for an output format
        assert a.get("gen_ai.output.type") == ("json" if a["canary.contract"] == "schema" else None)


def test_probe_spans_carry_the_model_and_id_the_answer_reported(spans: list[ReadableSpan]) -> None:
    completed = [p for p in _of(spans, "chat ") if p.attributes["canary.transport"] == "ok"]
    served = {
        (p.attributes["canary.provider"], p.attributes["gen_ai.response.model"]) for p in completed
    }
    assert served == {("alpha", MODEL), ("bravo", MODEL), ("charlie", OTHER_MODEL)}
    ids = [p.attributes["gen_ai.response.id"] for p in completed]
    assert all(str(i).startswith("gen-") for i in ids) and len(set(ids)) == len(ids)


def test_the_decision_and_its_reason_are_on_the_endpoint_span(spans: list[ReadableSpan]) -> None:
    second = sorted(_of(spans, "canary.round "), key=lambda s: s.start_time)[1]
    [bravo] = [
        s for s in _of(spans, "canary.endpoint bravo")
        if s.context.trace_id == second.context.trace_id
    ]  # fmt: skip
    assert bravo.attributes["canary.decision"] == "quarantine"
    causes = list(bravo.attributes["canary.decision.causes"])
    assert "hygiene" in causes  # (a stray prefix breaks the JSON answers too: schema)
    assert bravo.attributes["canary.decision.reason"] == "+".join(causes) + ": 2 failing rounds"
    assert bravo.attributes["canary.decision.rounds"] == 2
    assert bravo.attributes["canary.verdict"] == "fail"
    assert "hygiene:leading_garbage" in list(bravo.attributes["canary.reasons"])


def test_no_span_holds_prompt_or_answer_text_or_a_key(traced: Traced) -> None:
    # the fragment did reach the decision's free text (the audit row), and no span
    (quarantine,) = traced.drill.of_kind("quarantine")
    assert FRAGMENT in json.dumps(quarantine)
    spans = traced.spans
    text = json.dumps(
        [[s.name, dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
         for s in spans], default=str,
    )  # fmt: skip
    assert FRAGMENT not in text.lower()
    assert SECRET not in text and "sim-drill-key" not in text
    assert "gen_ai.input.messages" not in text and "gen_ai.output.messages" not in text
    assert "tavern" not in text.lower() and "{nonce}" not in text


@pytest.mark.slow
def test_without_traces_configured_no_opentelemetry_code_is_imported(tmp_path: Path) -> None:
    program = (
        "import asyncio, sys\n"
        "from canary.rounds.drill import run_drill\n"
        "from canary.config.settings import ModelSettings, Settings\n"
        f"s = Settings(languages=('en',), models=(ModelSettings(id={MODEL!r}),))\n"
        f"asyncio.run(run_drill({_scenario()!r}, 1, s))\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120,
        cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
