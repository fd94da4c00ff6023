"""CPU cost of judging one answer with the refusal, schema, tools and ttft contracts.

Run: .venv/bin/python tests/bench/bench_probe_contracts.py
Prints the mean CPU time per judged answer for each contract (the budget is 2 ms).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from canary.config.probe_set import load_probes
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.refusal import judge_refusal
from canary.core.contracts.schema import judge_schema
from canary.core.contracts.tools import judge_tools
from canary.core.contracts.ttft import judge_ttft
from canary.core.model import Contract, Observation, ToolCall, Transport

ROOT = Path(__file__).resolve().parents[2]
RUNS = 2000


def _cpu_ms(judge: Callable[[], object]) -> float:
    judge()  # warm caches (compiled validators)
    start = time.process_time()
    for _ in range(RUNS):
        judge()
    return (time.process_time() - start) * 1000 / RUNS


def main() -> None:
    probes = load_probes(ROOT / "probes", SUPPORTED_LANGUAGES)
    story = "Varro leans closer, the steel cold against her skin. " * 8
    refusal_answers = {
        lang: [Observation(Contract.refusal, "h", Transport.ok, language=lang, content=story)]
        for lang in SUPPORTED_LANGUAGES
    }
    beat = {"character": "Varro", "mood": "tense", "intensity": 4, "line": "The cargo. Now."}
    schema_answer = [Observation(Contract.schema, "h", Transport.ok, content=json.dumps(beat))]
    args = {"location": "chapel", "time_of_day": "dawn", "characters": ["Mira"], "summary": "Up."}
    call = ToolCall(0, "c", "record_scene_change", json.dumps(args))
    tools_answer = [Observation(Contract.tools, "h", Transport.ok, tool_calls=(call,))]
    ttft_answers = [
        Observation(Contract.ttft, "h", Transport.ok, ttft_s=t, content="Hi.") for t in (1, 2, 3)
    ]
    schema, tool = probes.schema, probes.tool
    figures = {
        "refusal (worst language)": max(
            _cpu_ms(lambda a=a: judge_refusal(a, probes.refusal_patterns))  # type: ignore[misc]
            for a in refusal_answers.values()
        ),
        "schema": _cpu_ms(lambda: judge_schema(schema_answer, schema, True)),
        "tools": _cpu_ms(lambda: judge_tools(tools_answer, tool, True, True)),
        "ttft (3 samples)": _cpu_ms(lambda: judge_ttft(ttft_answers, 10.0)),
    }
    print(f"{'contract':<26} {'CPU ms per answer':>18}")
    for name, ms in figures.items():
        print(f"{name:<26} {ms:>18.4f}")
    print(f"budget: 2 ms; worst: {max(figures.values()):.4f} ms")


if __name__ == "__main__":
    main()
