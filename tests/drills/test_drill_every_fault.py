"""Issue 13's last target, end to end: every degradation the simulator can inject, at rate 1.0,
fails its contract in the round it starts and is quarantined at the second round, never the
first; a stall before the first token counts as slowness, so it is quarantined too. Faults that
prove nothing about quality (transport errors, another provider's answer) quarantine nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from drill_kit import (
    MODEL,
    TEXT_ONLY,
    drill,
    fault,
    ignored,
    provider,
    rounds_of,
    scenario,
    settings,
    verdict_line,
    verdicts,
)

from canary.config.settings import ModelSettings, OpenRouterSettings
from canary.sim.scenario import DEFAULT_PARAMETERS, FaultKind

# For the faults about time, a short ttft threshold, so that a slow answer or a stall costs the
# test about a second; the stream's deadline leaves a second after the longest thought (0.9 s).
# The other faults keep the default deadlines: a loaded machine never turns them into timeouts.
TIMING = {"slow_first_token", "stall", "reasoning_first"}
FAST_DEADLINES = {
    "ttft_threshold_s": 0.5,
    "openrouter": OpenRouterSettings(first_token_timeout_s=0.6, stream_timeout_s=2.0),
}
REFUSING = {"refusal", "content_filter", "empty", "truncate"}

DEGRADATIONS: list[tuple[dict[str, Any], str]] = [
    (fault("slow_first_token", ttft_ms=900), "ttft"),
    (fault("stall", after_tokens=0), "ttft"),
    # thinking before the first content token is time the app waits too
    (fault("reasoning_first", ms=900), "ttft"),
    (fault("garbage_prefix"), "hygiene"),
    (fault("repetition"), "hygiene"),
    (fault("refusal"), "refusal"),
    (fault("content_filter"), "refusal"),
    (fault("empty"), "refusal"),
    (fault("truncate"), "refusal"),
    (fault("schema_break", how="prose"), "schema"),
    (fault("schema_break", how="missing_field"), "schema"),
    (fault("schema_break", how="invalid_json"), "schema"),
    # the drill asks in en and es: a drift into one of them is no drift when asked in it
    (fault("language_drift", to="de"), "language"),
    (fault("language_drift", to="ru"), "language"),
    (fault("language_mix", **{"with": "de", "share": 0.34}), "language"),
    (fault("mojibake"), "language"),
    (fault("tool_no_call"), "tools"),
    (fault("tool_unknown_name"), "tools"),
    (fault("tool_invalid_json"), "tools"),
    (fault("tool_schema_mismatch"), "tools"),
]


def _case_id(case: tuple[dict[str, Any], str]) -> str:
    broken, _ = case
    extra = [str(v) for k, v in broken.items() if k != "kind"]
    return "-".join([broken["kind"], *extra])


def _fleet(broken: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if broken["kind"].startswith("tool_"):
        fields["supported_parameters"] = [*DEFAULT_PARAMETERS, "tools", "tool_choice"]
    elif broken["kind"] in REFUSING:
        # no schema probe: a refusing host then fails the refusal contract alone
        fields["supported_parameters"] = TEXT_ONLY
    healthy = [provider(tag, **fields) for tag in ("alpha", "bravo", "charlie")]
    if broken["kind"] in REFUSING:
        # a refusal proves something only next to a control that is known to filter
        healthy.append(provider("filterhost", fault("refusal"), **fields))
    return scenario(*healthy, provider("delta", broken, **fields))


def _settings(broken: dict[str, Any]) -> Any:
    controls = ("filterhost",) if broken["kind"] in REFUSING else ()
    deadlines = FAST_DEADLINES if broken["kind"] in TIMING else {}
    return settings(model=ModelSettings(id=MODEL, positive_controls=controls), **deadlines)


def _waits(broken: dict[str, Any]) -> bool:
    """A fault that holds the stream on the real clock for most of a second: `make test`'s."""
    return broken["kind"] in {"slow_first_token", "stall"} or broken.get("ms", 0) >= 300


# The inner loop drills a failed contract of one answer (garbage_prefix), of the language (its
# pending-language repeat) and one harmless fault: the path from a failed contract to a quarantine
# is the same for every contract, and every fault kind is judged as its contract (or as no
# evidence) in tests/e2e/test_fault_judgement.py. `make test` drills them all.
QUICK = {"garbage_prefix", "language_mix-de-0.34", "http_error"}


def _marks(broken: dict[str, Any], case_id: str) -> list[pytest.MarkDecorator]:
    return [] if case_id in QUICK and not _waits(broken) else [pytest.mark.slow]


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=_case_id(c), marks=_marks(c[0], _case_id(c))) for c in DEGRADATIONS],
)
def test_a_degradation_at_rate_one_is_quarantined_at_round_two(
    case: tuple[dict[str, Any], str],
) -> None:
    broken, contract = case
    result = drill(_fleet(broken), 2, base=_settings(broken))
    assert verdicts(result, "delta") == ["fail", "fail"]
    for round_no in (1, 2):
        assert verdict_line(result, round_no, "delta")["contracts"][contract]["result"] == "fail"
    assert rounds_of(result, "quarantine", "delta") == [2]
    (quarantine,) = result.of_kind("quarantine")
    assert contract in quarantine["causes"]
    controls = ["filterhost"] if broken["kind"] in REFUSING else []  # published as controls
    assert ignored(result) == sorted(["delta", *controls])
    for tag in ("alpha", "bravo", "charlie"):
        assert "fail" not in verdicts(result, tag)


HARMLESS: list[dict[str, Any]] = [
    fault("http_error", status=503),
    fault("disconnect"),
    fault("midstream_error"),
    fault("stall", after_tokens=3),  # silent after the first token: the stream timed out
    fault("served_by", tag="alpha"),
    fault("served_model", id="other/model"),
    fault("reasoning_first", ms=50),  # a short thought: the first content token is in time
    # the equality check's faults shift only its own prompts' answers (tests/drills/
    # test_drill_equality.py): every contract of the rounds still passes
    fault("quantized", temperature=0.6),
    fault("substituted"),
    fault("template_broken"),
]


@pytest.mark.parametrize(
    "broken",
    [pytest.param(f, id=f["kind"], marks=_marks(f, f["kind"])) for f in HARMLESS],
)
def test_faults_that_prove_nothing_about_quality_quarantine_nothing(
    broken: dict[str, Any],
) -> None:
    result = drill(_fleet(broken), 2, base=_settings(broken))
    assert "fail" not in verdicts(result, "delta")
    assert result.of_kind("quarantine") == [] and ignored(result) == []


def test_every_fault_kind_of_the_simulator_has_a_drill() -> None:
    drilled = {broken["kind"] for broken, _ in DEGRADATIONS} | {
        broken["kind"] for broken in HARMLESS
    }
    assert drilled == {kind.value for kind in FaultKind}
