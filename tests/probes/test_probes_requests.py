"""Probe requests from the definitions: bodies, nonces, applicability, checksums, languages."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from canary.config.probe_set import ProbeSet, UnknownProbeLanguage, load_probes
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.refusal import judge_refusal
from canary.core.model import Contract, Endpoint, Observation, Result

EndpointOf = Callable[..., Endpoint]
PROBES_DIR = Path(__file__).resolve().parents[2] / "probes"


def test_text_probe_body_has_system_user_nonce_and_max_tokens(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    request = probe_set.request(Contract.language, "pt", "n0nce42", endpoint_of(), 400)
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": probe_set.prompts["pt"].system}
    assert user["role"] == "user"
    assert "n0nce42" in user["content"] and "{nonce}" not in user["content"]
    assert "português" in user["content"]
    assert request.body["max_tokens"] == 400
    assert set(request.body) == {"messages", "max_tokens"}
    assert (request.contract, request.language, request.nonce) == (
        Contract.language,
        "pt",
        "n0nce42",
    )
    assert request.parameters == ()


@pytest.mark.parametrize("contract", [Contract.ttft, Contract.refusal, Contract.language])
def test_each_text_contract_uses_its_own_prompt(
    probe_set: ProbeSet, endpoint_of: EndpointOf, contract: Contract
) -> None:
    body = probe_set.request(contract, "ja", "x1", endpoint_of(), 400).body
    expected = getattr(probe_set.prompts["ja"], str(contract)).replace("{nonce}", "x1")
    assert body["messages"][1]["content"] == expected


def test_different_nonces_give_different_prompts(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    a = probe_set.request(Contract.ttft, "en", "aaaa", endpoint_of(), 400)
    b = probe_set.request(Contract.ttft, "en", "bbbb", endpoint_of(), 400)
    assert a.body["messages"][1] != b.body["messages"][1]
    assert a.checksum == b.checksum


def test_schema_request_asks_for_strict_json_schema(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    request = probe_set.request(
        Contract.schema, "en", "n1", endpoint_of("structured_outputs", "response_format"), 400
    )
    response_format = request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == probe_set.schema_name
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", probe_set.schema_name)
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"] == probe_set.schema
    assert "n1" in request.body["messages"][1]["content"]
    assert request.parameters == ("response_format", "structured_outputs")
    assert request.checksum == probe_set.checksums["schema"]


def test_tools_request_forces_the_function_when_tool_choice_is_advertised(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    request = probe_set.request(
        Contract.tools, "en", "n2", endpoint_of("tools", "tool_choice"), 400
    )
    assert request.body["tools"] == [probe_set.tool]
    assert probe_set.tool["function"]["name"] == "record_scene_change"
    assert request.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "record_scene_change"},
    }
    assert request.parameters == ("tools", "tool_choice")


def test_tools_request_without_tool_choice_does_not_force(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    endpoint = endpoint_of("tools")
    request = probe_set.request(Contract.tools, "en", "n3", endpoint, 400)
    assert "tool_choice" not in request.body
    assert request.parameters == ("tools",)
    assert not probe_set.forces_tool(endpoint)


def test_tools_request_uses_required_when_the_endpoint_only_honours_required(
    probe_set: ProbeSet, endpoint_of: EndpointOf
) -> None:
    raw = {
        "supports_tool_choice": {"auto": True, "none": True, "required": True, "function": False}
    }
    endpoint = endpoint_of("tools", "tool_choice", raw=raw)
    assert (
        probe_set.request(Contract.tools, "en", "n4", endpoint, 400).body["tool_choice"]
        == "required"
    )


def test_max_tokens_is_capped_by_the_endpoint(probe_set: ProbeSet, endpoint_of: EndpointOf) -> None:
    endpoint = endpoint_of(max_completion_tokens=256)
    assert probe_set.request(Contract.ttft, "en", "n", endpoint, 400).body["max_tokens"] == 256


@pytest.mark.parametrize(
    ("contract", "parameters", "expected"),
    [
        (Contract.schema, ("structured_outputs", "response_format"), True),
        (Contract.schema, ("response_format",), False),  # JSON mode only: json_schema not promised
        (Contract.schema, (), False),
        (Contract.tools, ("tools",), True),
        (Contract.tools, ("tool_choice",), False),
        (Contract.ttft, (), True),
        (Contract.refusal, (), True),
        (Contract.language, (), True),
        (Contract.hygiene, (), True),
    ],
)
def test_applicability_follows_supported_parameters(
    probe_set: ProbeSet,
    endpoint_of: EndpointOf,
    contract: Contract,
    parameters: tuple[str, ...],
    expected: bool,
) -> None:
    assert probe_set.applicable(contract, endpoint_of(*parameters)) is expected


def test_request_checksums_name_the_definition_version(probe_set: ProbeSet) -> None:
    assert probe_set.checksum_for(Contract.ttft, "ko") == probe_set.checksums["prompts/ko"]
    assert probe_set.checksum_for(Contract.tools, "ko") == probe_set.checksums["tools"]
    refusal = probe_set.checksum_for(Contract.refusal, "ko")
    assert refusal not in probe_set.checksums.values()  # prompt + patterns together
    assert refusal != probe_set.checksum_for(Contract.refusal, "ja")


def test_unloaded_language_is_a_lookup_error(endpoint_of: EndpointOf) -> None:
    probes = load_probes(PROBES_DIR, ("en", "de"))
    with pytest.raises(UnknownProbeLanguage, match="'fr'.*en, de"):
        probes.request(Contract.ttft, "fr", "n", endpoint_of(), 400)


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_every_language_has_prompts_and_patterns(probe_set: ProbeSet, language: str) -> None:
    prompts = probe_set.prompts[language]
    assert prompts.system.strip()
    for text in (prompts.ttft, prompts.refusal, prompts.language):
        assert "{nonce}" in text
    assert probe_set.patterns[language]


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_localized_refusals_fail_the_refusal_contract(
    probe_set: ProbeSet, obs: Callable[..., Observation], language: str
) -> None:
    examples = _examples(language)
    assert len(examples["refusals"]) >= 3
    for text in examples["refusals"]:
        result = judge_refusal(
            [obs(Contract.refusal, language=language, content=text, finish_reason="stop")],
            probe_set.refusal_patterns,
        )
        assert result.result is Result.fail, (language, text)
        assert result.reason == "refusal_pattern"


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_in_character_answers_pass_the_refusal_contract(
    probe_set: ProbeSet, obs: Callable[..., Observation], language: str
) -> None:
    for text in _examples(language)["benign"]:
        result = judge_refusal(
            [obs(Contract.refusal, language=language, content=text, finish_reason="stop")],
            probe_set.refusal_patterns,
        )
        assert result.result is Result.passed, (language, text, result.detail)


def test_english_refusal_is_caught_whatever_the_probe_language(
    probe_set: ProbeSet, obs: Callable[..., Observation]
) -> None:
    answer = obs(
        Contract.refusal, language="th", content="I'm sorry, but I can't continue this scene."
    )
    assert judge_refusal([answer], probe_set.refusal_patterns).result is Result.fail


@pytest.mark.slow  # every language model of lingua, for the probe files: make test
def test_prompts_are_written_in_their_language(probe_set: ProbeSet) -> None:
    """The real detector (lingua, via canary.text) reads each prompt as its own language."""
    from canary.text.detect import LanguageAnalyzer

    analyze = LanguageAnalyzer(SUPPORTED_LANGUAGES)
    for language in SUPPORTED_LANGUAGES:
        prompts = probe_set.prompts[language]
        for text in (prompts.system, prompts.refusal, prompts.language):
            analysis = analyze(text.replace("{nonce}", "4f9a0c"), language)
            assert analysis.ok, (language, text, analysis.reason)


def _examples(language: str) -> dict[str, list[str]]:
    data = yaml.safe_load((PROBES_DIR / "refusal_patterns.yaml").read_text(encoding="utf-8"))
    spec: dict[str, list[str]] = data["languages"][language]
    return spec
