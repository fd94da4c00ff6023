"""Endpoint drift end to end: a drill changes, removes and adds endpoints on the simulator's
timeline; real rounds list them, diff them and print, store and audit one event per change.

One drill per backend (SQLite and PostgreSQL) serves the whole module: 7 rounds, one language,
one latency sample, fast simulated providers. The model's settings carry a price cap, a
quantization floor and a capacity floor of 3, so every routing-breaking kind of change occurs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from canary.config.settings import MaxPrice, ModelSettings, Settings
from canary.rounds.drill import DrillResult, run_drill
from canary.store.repository import Store

# multi-round drills (core.drift is checked in tests/core): make test
pytestmark = pytest.mark.slow

MODEL = "acme/drift-drill"
ROUNDS = 7
PARAMS = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs"]
WITHOUT_SCHEMA = ["max_tokens", "temperature", "seed"]
DRIFT_KEYS = {"event", "round", "model", "provider", "field", "old", "new", "alert"}


def provider(tag: str, **changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tag": tag,
        "quantization": "fp8",
        "price": {"prompt": 0.2, "completion": 0.6},
        "context_length": 32768,
        "supported_parameters": PARAMS,
        "ttft_ms": 5,
        "tokens_per_second": 5000,
    }
    spec.update(changes)
    return spec


def at(k: int, **entry: Any) -> dict[str, Any]:
    return {"round": k, "model": MODEL, **entry}


SCENARIO: dict[str, Any] = {
    "seed": 11,
    "models": [
        {
            "id": MODEL,
            "providers": [provider(t) for t in ("alpha", "bravo", "charlie", "delta", "echo")],
        }
    ],
    "timeline": [
        # round 2: a price rise within the cap, and one change of every other endpoint field
        at(2, provider="alpha", set={"price": {"prompt": 0.3, "completion": 0.9}}),
        at(2, provider="bravo", set={"quantization": "fp4"}),  # below the fp8 floor
        at(2, provider="charlie", set={"quantization": "bf16"}),  # above it
        at(2, provider="delta", set={"context_length": 8192, "max_completion_tokens": 2048}),
        at(2, provider="echo", set={"supported_parameters": [*PARAMS, "tools"]}),
        # round 3: over the prompt cap (completion unchanged), the schema parameters dropped,
        # and a `set` that changes nothing
        at(3, provider="alpha", set={"price": {"prompt": 1.5, "completion": 0.9}}),
        at(3, provider="charlie", set={"supported_parameters": WITHOUT_SCHEMA}),
        at(3, provider="delta", set={"context_length": 8192}),
        # round 4: one endpoint vanishes, 4 left: still at or above the floor of 3
        at(4, provider="echo", remove=True),
        # round 5: two more vanish, 2 left: below the floor
        at(5, provider="delta", remove=True),
        at(5, provider="bravo", remove=True),
        # round 6: two appear, one of them already over the completion cap
        at(6, add=provider("foxtrot")),
        at(6, add=provider("golf", price={"prompt": 0.2, "completion": 5.0})),
        # round 7: quiet
    ],
}

# (round, provider, field, alert): every drift event the drill must print, each exactly once.
EXPECTED = sorted(
    [
        (2, "alpha", "pricing.prompt", False),
        (2, "alpha", "pricing.completion", False),
        (2, "bravo", "quantization", True),
        (2, "charlie", "quantization", False),
        (2, "delta", "context_length", False),
        (2, "delta", "max_completion_tokens", False),
        (2, "echo", "supported_parameters", False),
        (3, "alpha", "pricing.prompt", True),
        (3, "charlie", "supported_parameters", True),
        (4, "echo", "presence", True),
        (5, "bravo", "presence", True),
        (5, "delta", "presence", True),
        (5, None, "capacity", False),
        (6, "foxtrot", "presence", False),
        (6, "golf", "presence", True),
        (6, None, "capacity", False),
    ],
    key=repr,
)


@dataclass(frozen=True)
class Drilled:
    result: DrillResult
    url: str

    @property
    def drift(self) -> list[dict[str, Any]]:
        return self.result.of_kind("drift")

    def one(self, k: int, tag: str | None, field: str) -> dict[str, Any]:
        [line] = [
            e for e in self.drift if (e["round"], e["provider"], e["field"]) == (k, tag, field)
        ]
        return line

    def verdicts(self, k: int) -> dict[str, dict[str, Any]]:
        return {e["provider"]: e for e in self.result.of_kind("verdict") if e["round"] == k}


def drill_base_settings() -> Settings:
    return Settings(
        languages=("en",),
        ttft_samples=1,
        models=(
            ModelSettings(
                id=MODEL,
                capacity_floor=3,
                max_price=MaxPrice(prompt=1.0, completion=2.0),
                min_quantization="fp8",
            ),
        ),
    )


@pytest.fixture(scope="module")
def drilled(store_url: str) -> Drilled:
    result = asyncio.run(run_drill(SCENARIO, ROUNDS, drill_base_settings(), database_url=store_url))
    return Drilled(result, store_url)


@pytest.fixture
def store(drilled: Drilled) -> Iterator[Store]:
    s = Store(drilled.url)
    yield s
    s.dispose()


def per_million(value: float) -> float:
    return round(value * 1_000_000, 9)


# -- the printed events -------------------------------------------------------------------------


def test_each_change_is_one_drift_event_in_the_round_it_happened(drilled: Drilled) -> None:
    seen = sorted(
        ((e["round"], e["provider"], e["field"], e["alert"]) for e in drilled.drift), key=repr
    )
    assert seen == EXPECTED  # nothing in round 1, nothing repeated, nothing in the quiet round 7


def test_drift_lines_carry_the_documented_keys(drilled: Drilled) -> None:
    assert drilled.drift
    for line in drilled.drift:
        assert DRIFT_KEYS <= set(line), line
        assert line["event"] == "drift" and line["model"] == MODEL
        assert isinstance(line["alert"], bool) and isinstance(line["round"], int)


def test_price_changes_are_per_side_and_alert_only_over_the_cap(drilled: Drilled) -> None:
    within = drilled.one(2, "alpha", "pricing.prompt")
    assert (per_million(within["old"]), per_million(within["new"])) == (0.2, 0.3)
    completion = drilled.one(2, "alpha", "pricing.completion")
    assert (per_million(completion["old"]), per_million(completion["new"])) == (0.6, 0.9)
    over = drilled.one(3, "alpha", "pricing.prompt")
    assert (per_million(over["old"]), per_million(over["new"])) == (0.3, 1.5)
    assert over["alert"] is True and over["reason"] == "prompt price 1.5 > cap 1 USD/M tokens"


def test_quantization_alerts_only_below_the_floor(drilled: Drilled) -> None:
    below = drilled.one(2, "bravo", "quantization")
    assert (below["old"], below["new"], below["alert"]) == ("fp8", "fp4", True)
    assert below["reason"] == "quantization fp4 < floor fp8"
    above = drilled.one(2, "charlie", "quantization")
    assert (above["old"], above["new"], above["alert"]) == ("fp8", "bf16", False)


def test_token_limit_changes_are_recorded_without_alert(drilled: Drilled) -> None:
    line = drilled.one(2, "delta", "context_length")
    assert (line["old"], line["new"], line["alert"]) == (32768, 8192, False)
    line = drilled.one(2, "delta", "max_completion_tokens")
    assert (line["old"], line["new"], line["alert"]) == (8192, 2048, False)


def test_supported_parameters_alert_only_when_schema_support_is_dropped(drilled: Drilled) -> None:
    added = drilled.one(2, "echo", "supported_parameters")
    assert added["new"] == sorted([*PARAMS, "tools"]) and added["alert"] is False
    dropped = drilled.one(3, "charlie", "supported_parameters")
    assert dropped["old"] == sorted(PARAMS) and dropped["new"] == sorted(WITHOUT_SCHEMA)
    assert dropped["alert"] is True
    assert dropped["reason"] == "stopped advertising response_format, structured_outputs"


def test_schema_contract_turns_not_applicable_once_structured_output_is_dropped(
    drilled: Drilled,
) -> None:
    schema = {
        k: drilled.verdicts(k)["charlie"]["contracts"]["schema"]["result"] for k in range(1, 8)
    }
    assert schema == {1: "pass", 2: "pass", **{k: "not_applicable" for k in range(3, 8)}}
    shown = drilled.verdicts(3)["charlie"]["contracts"]["schema"]
    assert shown["reason"] == "not_advertised" and "structured_outputs" in shown["detail"]
    # the peers that still advertise it keep being held to the schema
    assert drilled.verdicts(3)["alpha"]["contracts"]["schema"]["result"] == "pass"


def test_vanished_endpoints_alert_and_the_capacity_floor_is_watched(drilled: Drilled) -> None:
    for k, tag in ((4, "echo"), (5, "bravo"), (5, "delta")):
        line = drilled.one(k, tag, "presence")
        assert (line["old"], line["new"], line["alert"], line["reason"]) == (
            "present", None, True, "vanished",
        )  # fmt: skip
    below = drilled.one(5, None, "capacity")
    assert (below["old"], below["new"], below["alert"]) == (4, 2, False)
    assert below["reason"] == "2 endpoints < capacity floor 3"
    # what the floor means for routing is one floor episode, opened and closed once
    breached = drilled.result.of_kind("floor_breached")
    restored = drilled.result.of_kind("floor_restored")
    assert [e["round"] for e in breached] == [5] and breached[0]["usable"] == 2
    assert [e["round"] for e in restored] == [6]
    back = drilled.one(6, None, "capacity")
    assert (back["old"], back["new"], back["alert"], back["reason"]) == (2, 4, False, None)


def test_added_endpoints_appear_and_one_over_the_cap_alerts(drilled: Drilled) -> None:
    fine = drilled.one(6, "foxtrot", "presence")
    assert (fine["old"], fine["new"], fine["alert"]) == (None, "present", False)
    pricey = drilled.one(6, "golf", "presence")
    assert (pricey["old"], pricey["new"], pricey["alert"]) == (None, "present", True)
    assert pricey["reason"] == "completion price 5 > cap 2 USD/M tokens"


def test_probing_follows_the_endpoints_list(drilled: Drilled) -> None:
    probed = {k: set(drilled.verdicts(k)) for k in range(1, 8)}
    assert probed[1] == probed[3] == {"alpha", "bravo", "charlie", "delta", "echo"}
    assert probed[4] == {"alpha", "bravo", "charlie", "delta"}
    assert probed[5] == {"alpha", "charlie"}
    assert probed[6] == probed[7] == {"alpha", "charlie", "foxtrot", "golf"}


def test_drift_alone_never_quarantines(drilled: Drilled) -> None:
    kinds = Counter(e["event"] for e in drilled.result.events)
    assert kinds["quarantine"] == kinds["would_quarantine"] == 0
    assert drilled.result.summary["ignore"] == {MODEL: []}


# -- what the store kept ------------------------------------------------------------------------


def test_store_keeps_one_drift_row_per_printed_event(drilled: Drilled, store: Store) -> None:
    rows = store.drift(MODEL)
    assert [r.at for r in rows] == sorted((r.at for r in rows), reverse=True)  # newest first
    stored = Counter(
        (r.round_id, r.tag, r.field, repr(r.old), repr(r.new), r.alert, r.reason) for r in rows
    )
    printed = Counter(
        (e["evidence"][0]["id"], e["provider"], e["field"], repr(e["old"]), repr(e["new"]), e["alert"],
         e["reason"])
        for e in drilled.drift
    )  # fmt: skip
    assert stored == printed and len(rows) == len(EXPECTED)


def test_drift_since_filters_by_time(drilled: Drilled, store: Store) -> None:
    rows = store.drift(MODEL)
    cut = sorted({r.at for r in rows})[-2]  # the last two rounds with changes: 5 and 6
    recent = store.drift(MODEL, since=cut)
    assert {r.at for r in recent} == {r.at for r in rows if r.at >= cut}
    assert len(recent) == 6  # round 5 (three) and round 6 (three)


def test_every_alert_has_exactly_one_audit_record(drilled: Drilled, store: Store) -> None:
    audit = store.audit(model=MODEL, events=["drift"], limit=1000)
    alerts = [e for e in drilled.drift if e["alert"]]
    assert len(audit) == len(alerts) == 7
    recorded = Counter((a.tag, a.detail["field"], a.round_id) for a in audit)
    expected = Counter((e["provider"], e["field"], e["evidence"][0]["id"]) for e in alerts)
    assert recorded == expected
    for a in audit:
        assert a.actor == "canary" and a.policy_version
        assert a.detail["alert"] is True and a.detail["reason"]
        assert [look.id for look in a.evidence] == [a.round_id]


# -- a model whose endpoints list goes empty ------------------------------------------------------

EMPTIED = "acme/drift-emptied"


def test_an_emptied_endpoints_list_alerts_once_not_every_round(tmp_path: Path) -> None:
    scenario = {
        "seed": 3,
        "models": [{"id": EMPTIED, "providers": [provider("alpha"), provider("bravo")]}],
        "timeline": [
            {"round": 2, "model": EMPTIED, "provider": "alpha", "remove": True},
            {"round": 2, "model": EMPTIED, "provider": "bravo", "remove": True},
            {"round": 5, "model": EMPTIED, "add": provider("alpha")},
        ],
    }
    url = f"sqlite:///{tmp_path / 'emptied.db'}"
    base = Settings(languages=("en",), ttft_samples=1)
    drift = asyncio.run(run_drill(scenario, 6, base, database_url=url)).of_kind("drift")
    emptied = sorted(
        (e["provider"] or "", e["field"], e["alert"]) for e in drift if e["round"] == 2
    )
    assert emptied == [
        ("", "capacity", False),
        ("alpha", "presence", True),
        ("bravo", "presence", True),
    ]
    # still empty in rounds 3 and 4, unchanged in 6: nothing new to say, so nothing said
    assert [e["round"] for e in drift if e["round"] in (3, 4, 6)] == []
    # when an endpoint comes back, what vanished in round 2 is not reported vanished again
    assert [
        e["provider"]
        for e in drift
        if e["round"] > 2 and e["field"] == "presence" and e["new"] is None
    ] == []
    store = Store(url)
    try:
        audited = Counter(
            a.round_id for a in store.audit(model=EMPTIED, events=["drift"], limit=100)
        )
    finally:
        store.dispose()
    assert audited == Counter(e["evidence"][0]["id"] for e in drift if e["alert"])
