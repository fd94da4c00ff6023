"""Every fault kind changes the answer on the wire the way its name says."""

from __future__ import annotations

import json
from typing import Any

import builders
import httpx
import jsonschema
import pytest
from sim_helpers import MODEL, body, content, events, finish, pin

from canary.config.bundled import bundled_dir
from canary.config.equality_set import load_equality_prompts
from canary.config.probe_set import load_probes
from canary.core.model import Contract
from canary.sim.server import RunningSimulator
from canary.sim.text import detect_language, request_language

PT = "Continue a cena: o cavaleiro entra na taverna escura e procura a velha amiga."
SCHEMA = {
    "type": "object",
    "properties": {
        "character": {"type": "string", "maxLength": 40},
        "line": {"type": "string"},
        "mood": {"enum": ["calm", "angry", "afraid"]},
        "intensity": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "secret": {"type": "boolean"},
    },
    "required": ["character", "line", "mood", "intensity"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "turn", "strict": True, "schema": SCHEMA}}
TOOL = {
    "type": "function",
    "function": {
        "name": "change_scene",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "time_of_day": {"enum": ["dawn", "night"]},
            },
            "required": ["location", "time_of_day"],
            "additionalProperties": False,
        },
    },
}


def faulty(sim: RunningSimulator, *faults: dict[str, Any]) -> None:
    sim.state.set_faults(MODEL, "alpha", list(faults))


def ask(client: httpx.Client, text: str = PT, **extra: Any) -> list[dict[str, Any]]:
    r = client.post("/chat/completions", json=body(text, provider=pin("alpha"), **extra))
    assert r.status_code == 200, r.text
    return events(r.text)


def test_healthy_answer_is_in_the_request_language(client: httpx.Client) -> None:
    for text, lang in [
        (PT, "pt"),
        ("Продолжи сцену, пожалуйста.", "ru"),
        ("続きを書いてください。騎士が酒場に入る。", "ja"),
    ]:
        answer = content(ask(client, text))
        assert detect_language(answer) == lang


def test_each_of_canarys_prompts_is_taken_in_its_own_language_as_lingua_reads_it() -> None:
    """The simulator reads the language of canary's prompts from their files, not with lingua:
    the two must agree (the schema and tools probes and the equality check's prompts are English
    whatever the languages watched)."""
    languages = tuple(p.stem for p in (bundled_dir("probes") / "prompts").glob("*.yaml"))
    probes = load_probes(bundled_dir("probes"), languages)
    endpoint = builders.endpoint("alpha", "tools", "structured_outputs")
    for lang in languages:
        for contract in (Contract.ttft, Contract.refusal, Contract.language):
            prompt = _user(probes.request(contract, lang, "n0nce", endpoint, 64).body)
            assert request_language(prompt) == detect_language(prompt) == lang, (lang, contract)
    for contract in (Contract.schema, Contract.tools):
        prompt = _user(probes.request(contract, "de", "n0nce", endpoint, 64).body)
        assert request_language(prompt) == detect_language(prompt) == "en"
    equality = load_equality_prompts(bundled_dir("probes"))
    asked = [equality.story(p) for p in equality.prompts] + [k.prompt for k in equality.known]
    assert {(request_language(p), detect_language(p)) for p in asked} == {("en", "en")}
    assert request_language(PT) == "pt"  # any other text: detected


def _user(body: dict[str, Any]) -> str:
    (last,) = [m for m in body["messages"] if m["role"] == "user"]
    return str(last["content"])


def test_garbage_prefix(client: httpx.Client, sim: RunningSimulator) -> None:
    healthy = content(ask(client))
    faulty(sim, {"kind": "garbage_prefix"})
    bad = content(ask(client))
    assert healthy[0].isalpha() or healthy[0] in '"«“'
    assert bad[0] in '*)"]–:_.,' or bad.startswith(("ological", "ing"))


def test_refusal_is_localized(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "refusal"})
    assert content(ask(client, "Continue the scene in the tavern.")).startswith("I can't continue")
    assert content(ask(client)).startswith("Não posso continuar")


def test_content_filter(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "content_filter"})
    evs = ask(client)
    assert finish(evs) == "content_filter"
    assert len(content(evs)) < 40


def test_empty(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "empty"})
    evs = ask(client)
    assert content(evs) == "" and finish(evs) == "stop"
    assert evs[-1]["usage"]["completion_tokens"] == 0


def test_truncate(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "truncate"})
    evs = ask(client)
    assert finish(evs) == "length"
    assert 3 <= evs[-1]["usage"]["completion_tokens"] <= 8


def test_max_tokens_caps_a_healthy_answer(client: httpx.Client) -> None:
    evs = ask(client, max_tokens=5)
    assert evs[-1]["usage"]["completion_tokens"] <= 5


@pytest.mark.parametrize("how", ["prose", "missing_field", "invalid_json"])
def test_schema_break(client: httpx.Client, sim: RunningSimulator, how: str) -> None:
    healthy = json.loads(content(ask(client, response_format=FORMAT)))
    jsonschema.validate(healthy, SCHEMA)
    assert detect_language(healthy["line"]) == "pt"
    faulty(sim, {"kind": "schema_break", "how": how})
    text = content(ask(client, response_format=FORMAT))
    if how == "missing_field":
        with pytest.raises(jsonschema.ValidationError, match="'character' is a required"):
            jsonschema.validate(json.loads(text), SCHEMA)
    else:
        with pytest.raises(ValueError):
            json.loads(text)


def test_json_object_mode_answers_an_object(client: httpx.Client) -> None:
    value = json.loads(content(ask(client, response_format={"type": "json_object"})))
    assert isinstance(value, dict) and value


def test_language_drift(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "language_drift", "to": "es"})
    assert detect_language(content(ask(client))) == "es"


def test_when_language_limits_a_fault(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "language_drift", "to": "es", "when_language": "pt"})
    assert detect_language(content(ask(client))) == "es"
    assert detect_language(content(ask(client, "Continuez la scène, je vous prie."))) == "fr"


def test_language_mix(client: httpx.Client, sim: RunningSimulator) -> None:
    from canary.sim.text import split_sentences

    faulty(sim, {"kind": "language_mix", "with": "es", "share": 0.5})
    sentences = split_sentences(content(ask(client)), "pt")
    langs = [detect_language(s) for s in sentences]
    assert langs.count("es") >= 2 and langs.count("pt") >= 2


def test_mojibake(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "mojibake"})
    text = content(ask(client))
    assert "Ã" in text or "\ufffd" in text
    assert "\ufffd" in content(ask(client, "Continue the scene in the old tavern."))


def test_repetition(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "repetition"})
    text = content(ask(client))
    phrase = " ".join(text.split()[-3:])
    assert text.count(phrase) >= 10


def test_slow_first_token(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "slow_first_token", "ttft_ms": 250})
    ask(client)
    entry = sim.state.requests()[-1]
    assert entry["configured_ttft_ms"] == 250
    assert 250 <= entry["first_token_delay_ms"] < 1000


def test_reasoning_first(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "reasoning_first", "ms": 120})
    evs = ask(client)
    deltas = [e["choices"][0]["delta"] for e in evs if e["choices"]]
    first_content = next(i for i, d in enumerate(deltas) if d.get("content"))
    assert first_content > 0 and all(d.get("reasoning") for d in deltas[:first_content])
    assert sim.state.requests()[-1]["first_token_delay_ms"] >= 120


def test_served_by_answers_as_another_provider(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "served_by", "tag": "charlie"})
    evs = ask(client)
    assert {e["provider"] for e in evs} == {"Charlie"}
    assert sim.state.requests()[-1]["provider"] == "charlie"


def test_midstream_error(client: httpx.Client, sim: RunningSimulator) -> None:
    from openrouter import components
    from openrouter.utils import unmarshal_json

    faulty(sim, {"kind": "midstream_error", "after_tokens": 4, "code": 502})
    r = client.post("/chat/completions", json=body(PT, provider=pin("alpha")))
    assert r.status_code == 200 and "[DONE]" not in r.text
    evs = events(r.text)
    last = evs[-1]
    assert last["error"]["code"] == 502 and last["choices"][0]["finish_reason"] == "error"
    chunk = unmarshal_json(json.dumps({"data": last}), components.ChatStreamingResponse).data
    assert chunk.error is not None and chunk.error.code == 502
    assert len([e for e in evs[:-1] if e["choices"][0]["delta"].get("content")]) == 4


def test_midstream_error_non_streaming(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "midstream_error", "after_tokens": 2, "code": 502})
    r = client.post("/chat/completions", json=body(PT, stream=False, provider=pin("alpha")))
    choice = r.json()["choices"][0]
    assert r.status_code == 200 and choice["finish_reason"] == "error"
    assert choice["error"]["code"] == 502


def test_disconnect_aborts_without_done(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "disconnect", "after_tokens": 3})
    received = ""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/chat/completions", json=body(PT, provider=pin("alpha"))) as r,
    ):
        for text in r.iter_text():
            received += text
    assert len(events(received)) == 3 and "[DONE]" not in received


def test_stall_keeps_the_stream_open(sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "stall", "after_tokens": 2})
    received = ""
    with (
        httpx.Client(
            base_url=sim.base_url,
            headers={"Authorization": "Bearer k"},
            timeout=httpx.Timeout(5, read=0.4),
        ) as c,
        pytest.raises(httpx.ReadTimeout),
    ):
        with c.stream("POST", "/chat/completions", json=body(PT, provider=pin("alpha"))) as r:
            for text in r.iter_text():
                received += text
    assert len(events(received)) == 2


def test_a_stall_sends_keepalive_comments_and_no_token(sim: RunningSimulator) -> None:
    """As OpenRouter does while a provider holds the request: the stream stays alive, silent."""
    faulty(sim, {"kind": "stall", "after_tokens": 0})
    received = ""
    with (
        httpx.Client(
            base_url=sim.base_url,
            headers={"Authorization": "Bearer k"},
            timeout=httpx.Timeout(5, read=3),
        ) as c,
        c.stream("POST", "/chat/completions", json=body(PT, provider=pin("alpha"))) as r,
    ):
        assert r.status_code == 200
        for text in r.iter_text():
            received += text
            if received.count(": OPENROUTER PROCESSING") > 2:  # one after the opening pair
                break
    assert events(received) == [] and "[DONE]" not in received


@pytest.mark.parametrize("stream", [True, False])
def test_http_error(client: httpx.Client, sim: RunningSimulator, stream: bool) -> None:
    faulty(sim, {"kind": "http_error", "status": 502})
    r = client.post("/chat/completions", json=body(PT, stream=stream, provider=pin("alpha")))
    assert r.status_code == 502 and r.json()["error"]["code"] == 502


def test_fault_rate_applies_per_request(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "empty", "rate": 0.5})
    empties = sum(content(ask(client)) == "" for _ in range(20))
    assert 3 <= empties <= 17


def tool_call(evs: list[dict[str, Any]]) -> tuple[str | None, str]:
    name, args = None, ""
    for e in evs:
        for c in e.get("choices", []):
            for call in c["delta"].get("tool_calls") or []:
                name = call.get("function", {}).get("name") or name
                args += call.get("function", {}).get("arguments") or ""
    return name, args


def test_healthy_tool_call_streams_valid_arguments(client: httpx.Client) -> None:
    evs = ask(client, tools=[TOOL], tool_choice="required")
    name, args = tool_call(evs)
    assert name == "change_scene" and finish(evs) == "tool_calls"
    pieces = [e for e in evs if e["choices"] and e["choices"][0]["delta"].get("tool_calls")]
    assert len(pieces) > 2 and pieces[0]["choices"][0]["delta"]["tool_calls"][0]["id"]
    jsonschema.validate(json.loads(args), TOOL["function"]["parameters"])


def test_tool_no_call(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "tool_no_call"})
    evs = ask(client, tools=[TOOL], tool_choice="required")
    assert tool_call(evs) == (None, "") and finish(evs) == "stop" and content(evs)


def test_tool_unknown_name(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "tool_unknown_name"})
    name, _ = tool_call(ask(client, tools=[TOOL], tool_choice="required"))
    assert name and name != "change_scene"


def test_tool_invalid_json(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "tool_invalid_json"})
    _, args = tool_call(ask(client, tools=[TOOL], tool_choice="required"))
    with pytest.raises(ValueError):
        json.loads(args)


def test_tool_schema_mismatch(client: httpx.Client, sim: RunningSimulator) -> None:
    faulty(sim, {"kind": "tool_schema_mismatch"})
    _, args = tool_call(ask(client, tools=[TOOL], tool_choice="required"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(args), TOOL["function"]["parameters"])
