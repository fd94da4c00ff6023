"""Scenario validation and the schema-driven JSON generator (no server)."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from canary.sim.scenario import FAULTS, FaultKind, LanguageMix, ScenarioError, load_scenario
from canary.sim.schemagen import generate

BASE: dict[str, Any] = {"models": [{"id": "acme/x", "providers": [{"tag": "a"}]}]}


def with_fault(fault: dict[str, Any]) -> dict[str, Any]:
    return {
        "models": [
            {
                "id": "acme/x",
                "providers": [{"tag": "a"}, {"tag": "b"}, {"tag": "c", "faults": [fault]}],
            }
        ]
    }


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"kind": "nope"}, "faults.0': unknown kind 'nope'"),
        (
            {"kind": "stall", "after": 2},
            "unknown field 'models.0.providers.2.faults.0.stall.after'",
        ),
        ({"kind": "slow_first_token"}, "slow_first_token.ttft_ms' is required"),
        (
            {"kind": "http_error", "status": 200},
            "http_error.status': should be at least 400, not 200",
        ),
        ({"kind": "language_mix", "with": "es", "share": 2}, "share': should be at most 1, not 2"),
        (
            {"kind": "schema_break", "how": "weird"},
            "how': should be one of 'prose', 'missing_field'",
        ),
        ({"kind": "served_by", "tag": "zz"}, "served_by.tag 'zz' is not a provider"),
        ({"kind": "empty", "rate": 1.5}, "rate"),
        ({"kind": "empty", "when_language": "xx"}, "when_language"),
    ],
)
def test_bad_faults_give_a_readable_error(fault: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match="models") as info:
        load_scenario(with_fault(fault))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_every_fault_kind_loads_with_its_defaults() -> None:
    needed = {
        "slow_first_token": {"ttft_ms": 1},
        "language_drift": {"to": "es"},
        "language_mix": {"with": "de"},
        "served_by": {"tag": "a"},
        "served_model": {"id": "other/model"},
    }
    for kind in FaultKind:
        scenario = load_scenario(with_fault({"kind": kind.value, **needed.get(kind.value, {})}))
        fault = scenario.models[0].providers[2].faults[0]
        assert fault.kind is kind and fault.rate == 1.0


def test_provider_defaults_and_bad_values() -> None:
    provider = load_scenario(BASE).models[0].providers[0]
    assert provider.name == "A" and provider.ttft_ms == 300 and provider.status == 0
    for bad, field in [
        ({"tag": "A"}, "tag"),
        ({"tag": "a", "quantization": "fp9"}, "quantization"),
        ({"tag": "a", "colour": 1}, "colour"),
        ({"tag": "a/b/c"}, "tag"),
    ]:
        with pytest.raises(ScenarioError, match=field):
            load_scenario({"models": [{"id": "acme/x", "providers": [bad]}]})


def test_duplicate_tags_and_unknown_timeline_model_are_rejected() -> None:
    with pytest.raises(ScenarioError, match="duplicate provider tag"):
        load_scenario({"models": [{"id": "acme/x", "providers": [{"tag": "a"}, {"tag": "a"}]}]})
    with pytest.raises(ScenarioError, match="unknown model"):
        load_scenario(
            {**BASE, "timeline": [{"round": 1, "model": "acme/y", "provider": "a", "remove": True}]}
        )


def test_shipped_scenarios_load() -> None:
    from pathlib import Path

    import canary.sim

    folder = Path(canary.sim.__file__).parent / "scenarios"
    showcase = load_scenario(folder / "showcase.yaml")
    kinds = {f.kind for p in showcase.models[0].providers for f in p.faults}
    assert {"garbage_prefix", "language_drift", "schema_break", "refusal"} <= kinds
    assert load_scenario(folder / "example.yaml").timeline


SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "a": {"type": "string", "minLength": 3, "maxLength": 9},
            "n": {"type": "integer", "minimum": 5, "maximum": 7},
            "x": {"type": "number", "exclusiveMaximum": 2},
        },
        "required": ["a", "n"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"enum": ["a", "b"]}}
        },
    },
    {
        "type": "object",
        "properties": {"who": {"$ref": "#/$defs/who"}},
        "required": ["who"],
        "$defs": {
            "who": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"}},
                "required": ["name", "ok"],
            }
        },
    },
    {
        "type": "object",
        "properties": {
            "v": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            "c": {"const": "fixed"},
            "t": {"type": ["string", "null"], "format": "date"},
        },
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_generated_values_satisfy_the_schema(schema: dict[str, Any]) -> None:
    for seed in range(20):
        value = generate(schema, ["Olá, viajante.", "A taverna está cheia."], random.Random(seed))
        jsonschema.validate(value, schema)


def test_a_fault_may_hold_its_parameters_under_params_and_reads_back_as_dumped() -> None:
    fault = (
        load_scenario(with_fault({"kind": "language_mix", "params": {"with": "de", "share": 0.25}}))
        .models[0]
        .providers[2]
        .faults[0]
    )
    assert isinstance(fault, LanguageMix) and (fault.with_, fault.share) == ("de", 0.25)
    assert FAULTS.validate_python([fault.model_dump(mode="json", by_alias=True)]) == (fault,)
