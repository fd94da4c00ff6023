"""The simulator's wire format, validated by the official SDKs' own models."""

from __future__ import annotations

import json

import httpx
import pytest
from openrouter import components, errors, operations
from openrouter.utils import unmarshal_json
from sim_helpers import MODEL, body, content, events, pin

from canary.sim.server import RunningSimulator


def test_endpoints_list_validates_with_the_sdk(client: httpx.Client) -> None:
    r = client.get(f"/models/{MODEL}/endpoints")
    assert r.status_code == 200
    parsed = unmarshal_json(r.text, operations.ListEndpointsResponse)
    tags = [e.tag for e in parsed.data.endpoints]
    assert tags == ["alpha", "bravo/fp8", "bravo/flex", "charlie"]
    alpha = r.json()["data"]["endpoints"][0]
    assert alpha["pricing"] == {"prompt": "0.0000002", "completion": "0.0000006"}
    assert alpha["provider_name"] == "Alpha"
    for key in ("native_tools", "service_tier", "supports_diarization", "supports_tool_choice"):
        assert key in alpha


def test_models_and_providers_lists(client: httpx.Client) -> None:
    models = client.get("/models").json()
    parsed = unmarshal_json(json.dumps(models), components.ModelsListResponse)
    assert parsed.total_count == 2 and models["links"] == {"next": None}
    tooled = client.get("/models", params={"supported_parameters": "tools"}).json()
    assert [m["id"] for m in tooled["data"]] == [MODEL]
    slugs = [p["slug"] for p in client.get("/providers").json()["data"]]
    assert slugs == ["alpha", "bravo", "charlie", "delta"]


def test_unknown_model_endpoints_is_404(client: httpx.Client) -> None:
    r = client.get("/models/acme/nope/endpoints")
    assert r.status_code == 404
    unmarshal_json(r.text, errors.NotFoundResponseErrorData)


def test_stream_chunks_validate_with_the_sdk(client: httpx.Client) -> None:
    r = client.post("/chat/completions", json=body(provider=pin("alpha")))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.text.startswith(": OPENROUTER PROCESSING\n\n")
    assert r.text.rstrip().endswith("data: [DONE]")
    evs = events(r.text)
    for ev in evs:
        chunk = unmarshal_json(json.dumps({"data": ev}), components.ChatStreamingResponse).data
        assert chunk.object == "chat.completion.chunk"
        assert ev["provider"] == "Alpha" and ev["model"] == MODEL
    assert evs[0]["choices"][0]["delta"]["role"] == "assistant"
    last_choice = evs[-2]["choices"][0]
    assert last_choice["finish_reason"] == "stop" and last_choice["native_finish_reason"] == "stop"
    usage = evs[-1]
    assert usage["choices"] == []
    u = usage["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    expected = (u["prompt_tokens"] * 0.2 + u["completion_tokens"] * 0.6) / 1e6
    assert u["cost"] == pytest.approx(expected)
    assert len(content(evs).split(". ")) >= 3  # several sentences


def test_non_streaming_result_validates_with_the_sdk(client: httpx.Client) -> None:
    r = client.post("/chat/completions", json=body(stream=False, provider=pin("charlie")))
    assert r.status_code == 200
    assert r.text.startswith("\n") and r.text.lstrip().startswith("{")
    result = unmarshal_json(r.text, components.ChatResult)
    assert result.object == "chat.completion"
    data = json.loads(r.text)
    assert data["system_fingerprint"] is None and data["provider"] == "Charlie"
    assert data["choices"][0]["message"]["content"]


@pytest.mark.parametrize(
    ("payload", "status", "model"),
    [
        (body(provider={"only": ["nobody"]}), 404, errors.NotFoundResponseErrorData),
        (body(model="acme/nope"), 400, errors.BadRequestResponseErrorData),
        (body(provider={"only": ["alpha"], "bogus": 1}), 400, errors.BadRequestResponseErrorData),
    ],
)
def test_error_bodies_validate_with_the_sdk(
    client: httpx.Client, payload: dict[str, object], status: int, model: type
) -> None:
    r = client.post("/chat/completions", json=payload)
    assert r.status_code == status
    parsed = unmarshal_json(r.text, model)
    assert parsed.error.code == status
    assert r.json()["user_id"] == "user_sim"


def test_missing_or_wrong_key_is_401(sim: RunningSimulator) -> None:
    r = httpx.post(f"{sim.base_url}/chat/completions", json=body())
    assert r.status_code == 401
    unmarshal_json(r.text, errors.UnauthorizedResponseErrorData)
    r = httpx.post(
        f"{sim.base_url}/chat/completions", json=body(), headers={"Authorization": "Basic abc"}
    )
    assert r.status_code == 401


def test_configured_api_key_is_enforced() -> None:
    from canary.sim.server import start_simulator

    with start_simulator(
        {
            "api_key": "sk-right",
            "models": [
                {
                    "id": MODEL,
                    "providers": [{"tag": "alpha", "ttft_ms": 1, "tokens_per_second": 50000}],
                }
            ],
        }
    ) as sim:
        url = f"{sim.base_url}/chat/completions"
        wrong = httpx.post(url, json=body(), headers={"Authorization": "Bearer sk-wrong"})
        right = httpx.post(
            url, json=body(stream=False), headers={"Authorization": "Bearer sk-right"}
        )
    assert (wrong.status_code, right.status_code) == (401, 200)


def test_openai_sdk_streams_from_the_simulator(sim: RunningSimulator) -> None:
    import openai  # here: importing it costs every test process half a second

    oa = openai.OpenAI(base_url=sim.base_url, api_key="sk-test", max_retries=0)
    stream = oa.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Continua la scena, per favore."}],
        stream=True,
        extra_body={"provider": pin("alpha")},
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    oa.close()
    assert len(text) > 80
    assert sim.state.requests()[-1]["language"] == "it"


def test_openrouter_sdk_streams_pinned(sim: RunningSimulator) -> None:
    from openrouter import OpenRouter
    from openrouter.utils import BackoffStrategy, RetryConfig

    with OpenRouter(
        api_key="sk-test",
        server_url=sim.base_url,
        retry_config=RetryConfig("none", BackoffStrategy(1, 1, 1.0, 1), False),
    ) as c:
        listed = c.endpoints.list(author="acme", slug="roleplay-1")
        assert len(listed.data.endpoints) == 4
        stream = c.chat.send(
            model=MODEL,
            messages=[{"role": "user", "content": "Hallo, weiter!"}],
            provider=pin("bravo/fp8"),
            stream=True,
        )
        chunks = list(stream)
    assert any(ch.usage for ch in chunks)
    assert sim.state.requests()[-1]["provider"] == "bravo/fp8"
