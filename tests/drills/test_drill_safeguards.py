"""The safeguards end to end: the system doubts its own conclusions before it removes capacity."""

from __future__ import annotations

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

from canary.config.settings import ModelSettings

PREFIX = fault("garbage_prefix")


def test_capacity_floor_holds_the_last_endpoints_and_alerts() -> None:
    result = drill(scenario(provider("alpha"), provider("bravo", PREFIX)), 3)
    assert verdicts(result, "bravo") == ["fail", "fail", "fail"]
    assert result.of_kind("quarantine") == []
    assert rounds_of(result, "floor_held", "bravo") == [2, 3]
    held = result.of_kind("floor_held")[0]
    assert held["kept"] == "bravo" and held["floor"] == 2 and held["alert"] is True
    assert held["usable"] == ["alpha", "bravo"]
    assert "below the capacity floor of 2" in held["why"]
    assert ignored(result) == []


@pytest.mark.slow  # the order is tests/core's; drilled:
# test_capacity_floor_holds_the_last_endpoints_and_alerts
def test_capacity_floor_removes_the_first_candidate_and_keeps_the_next_deterministically() -> None:
    base = settings(model=ModelSettings(id=MODEL, capacity_floor=4))
    fleet = [provider(t) for t in ("alpha", "bravo", "charlie")]
    result = drill(
        scenario(*fleet, provider("delta", PREFIX), provider("echo", PREFIX)), 2, base=base
    )
    # 5 endpoints, floor 4: delta (first by tag among equal streaks) leaves, echo must stay
    assert rounds_of(result, "quarantine", "delta") == [2]
    (held,) = result.of_kind("floor_held")
    assert held["kept"] == "echo" and held["order"] == ["delta", "echo"]
    assert ignored(result) == ["delta"]


def test_observe_mode_records_would_quarantine_and_changes_no_list() -> None:
    result = drill(
        scenario(
            provider("alpha"), provider("bravo"), provider("charlie"), provider("delta", PREFIX)
        ),
        3,
        mode="observe",
    )
    assert verdicts(result, "delta") == ["fail", "fail", "fail"]
    assert rounds_of(result, "would_quarantine", "delta") == [2]  # once per streak
    assert result.of_kind("quarantine") == []
    assert result.summary["mode"] == "observe" and result.summary["would_quarantine"] == 1
    assert ignored(result) == []


def _control_fleet(control_faults: list[dict[str, object]]) -> dict[str, object]:
    # Without response_format there is no schema probe: a refusing host fails refusal alone.
    return scenario(
        provider("alpha"),
        provider("bravo"),
        provider("charlie"),
        provider("delta", fault("refusal"), supported_parameters=TEXT_ONLY),
        provider("filterhost", *control_faults, supported_parameters=TEXT_ONLY),
    )


def _with_control() -> object:
    return settings(model=ModelSettings(id=MODEL, positive_controls=("filterhost",)))


def test_filtering_positive_control_lets_the_refusal_probe_judge_the_others() -> None:
    result = drill(_control_fleet([fault("refusal")]), 2, base=_with_control())
    assert result.of_kind("probe_weak") == []
    delta = verdict_line(result, 1, "delta")["contracts"]["refusal"]
    assert delta["result"] == "fail"
    control = verdict_line(result, 1, "filterhost")["contracts"]["refusal"]
    assert control["result"] == "inconclusive" and control["reason"] == "positive_control"
    assert "fail" not in verdicts(result, "filterhost")  # its expected refusal never counts
    assert rounds_of(result, "quarantine", "delta") == [2]
    assert ignored(result) == ["delta", "filterhost"]  # the control is published as a control


@pytest.mark.slow  # the control's rule is tests/core's; drilled:
# test_filtering_positive_control_lets_the_refusal_probe_judge_the_others
def test_healthy_positive_control_marks_the_probe_weak_and_proves_nothing() -> None:
    result = drill(_control_fleet([]), 2, base=_with_control())
    assert rounds_of(result, "probe_weak") == [1, 2]
    weak = result.of_kind("probe_weak")[0]
    assert weak["contract"] == "refusal" and "filterhost" in weak["why"]
    for tag in ("alpha", "delta"):
        refusal = verdict_line(result, 1, tag)["contracts"]["refusal"]
        assert refusal["result"] == "inconclusive" and refusal["reason"] == "probe_weak"
    # a weak probe is no evidence either way: no one passes the round, and no one fails it
    assert set(verdicts(result, "alpha")) == {"inconclusive"}
    assert set(verdicts(result, "delta")) == {"inconclusive"}
    assert result.of_kind("quarantine") == []


def test_a_contract_failing_on_most_endpoints_blames_the_model_not_the_providers() -> None:
    broken = fault("schema_break", how="missing_field")
    result = drill(
        scenario(
            provider("alpha", broken),
            provider("bravo", broken),
            provider("charlie", broken),
            provider("delta"),
            provider("echo"),
        ),
        3,
    )
    assert rounds_of(result, "model_wide") == [1, 2, 3]
    wide = result.of_kind("model_wide")[0]
    assert wide["contract"] == "schema" and wide["tags"] == ["alpha", "bravo", "charlie"]
    schema = verdict_line(result, 2, "alpha")["contracts"]["schema"]
    assert schema["result"] == "inconclusive" and schema["reason"] == "model_wide"
    assert set(verdicts(result, "alpha")) == {"inconclusive"}
    assert result.of_kind("quarantine") == [] and ignored(result) == []


@pytest.mark.slow  # drilled as a harmless fault: test_drill_every_fault's served_by
def test_answer_served_by_another_provider_is_an_invalid_probe_never_a_failure() -> None:
    # bravo's answers are broken, but they say alpha served them: nothing can be concluded.
    result = drill(
        scenario(
            provider("alpha"),
            provider("bravo", PREFIX, fault("served_by", tag="alpha")),
            provider("charlie"),
            provider("delta"),
        ),
        3,
    )
    assert "fail" not in verdicts(result, "bravo") and "pass" not in verdicts(result, "bravo")
    contracts = verdict_line(result, 1, "bravo")["contracts"]
    judged = {c: r for c, r in contracts.items() if r["result"] != "not_applicable"}
    assert judged and all(r["result"] != "fail" for r in judged.values())
    assert {r["reason"] for c, r in judged.items() if c != "hygiene"} == {"attribution_mismatch"}
    assert result.of_kind("quarantine") == []


@pytest.mark.slow  # the repeat is tests/core's; a language fault is drilled in
# test_drill_every_fault
def test_a_language_anomaly_makes_the_next_round_repeat_that_language() -> None:
    # bravo drifts into Spanish only when asked in English; rotation alternates en/es per round,
    # so without the repeat bravo would fail every other round and never be quarantined.
    result = drill(
        scenario(
            provider("alpha"),
            provider("bravo", fault("language_drift", to="es", when_language="en")),
            provider("charlie"),
            provider("delta"),
        ),
        4,
    )
    languages = [verdict_line(result, k, "bravo")["language"] for k in (1, 2, 3, 4)]
    alpha = [verdict_line(result, k, "alpha")["language"] for k in (1, 2, 3, 4)]
    assert alpha in (["en", "es", "en", "es"], ["es", "en", "es", "en"])  # rotation
    first_en = languages.index("en")
    assert first_en <= 1
    assert languages[first_en + 1] == "en"  # repeated, not rotated
    assert verdicts(result, "bravo")[first_en : first_en + 2] == ["fail", "fail"]
    language = verdict_line(result, first_en + 1, "bravo")["contracts"]["language"]
    assert language["result"] == "fail"
    assert rounds_of(result, "quarantine", "bravo") == [first_en + 2]
