"""The `provider` routing object: pinning, fallback, ignore, require_parameters, only."""

from __future__ import annotations

import httpx
import pytest
from sim_helpers import body, events, pin

from canary.sim.server import RunningSimulator

TAGS = ["alpha", "bravo/fp8", "bravo/flex", "charlie"]


@pytest.mark.parametrize("tag", TAGS)
def test_a_pinned_request_is_answered_by_the_pinned_endpoint_only(
    client: httpx.Client, sim: RunningSimulator, tag: str
) -> None:
    for other in TAGS:  # every other endpoint would fail loudly if it were tried
        if other != tag:
            sim.state.set_faults("acme/roleplay-1", other, [{"kind": "http_error", "status": 500}])
    for _ in range(3):
        r = client.post("/chat/completions", json=body(provider=pin(tag)))
        assert r.status_code == 200
    log = sim.state.requests()
    assert {e["provider"] for e in log} == {tag}
    assert all(a["provider"] == tag for e in log for a in e["attempts"])


def test_pinned_failure_returns_the_upstream_error_without_fallback(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    sim.state.set_faults(
        "acme/roleplay-1", "alpha", [{"kind": "http_error", "status": 429, "retry_after": 7}]
    )
    r = client.post("/chat/completions", json=body(provider=pin("alpha")))
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert r.json()["error"]["code"] == 429
    assert [a["provider"] for a in sim.state.requests()[-1]["attempts"]] == ["alpha"]


def test_fallback_when_allowed_reaches_the_next_provider(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    sim.state.set_faults("acme/roleplay-1", "alpha", [{"kind": "http_error", "status": 503}])
    r = client.post(
        "/chat/completions",
        json=body(provider={"order": ["alpha", "charlie"], "allow_fallbacks": True}),
    )
    assert r.status_code == 200
    assert events(r.text)[0]["provider"] == "Charlie"
    entry = sim.state.requests()[-1]
    assert [a["provider"] for a in entry["attempts"]] == ["alpha", "charlie"]
    assert entry["provider"] == "charlie"


def test_503_carries_retry_after(client: httpx.Client, sim: RunningSimulator) -> None:
    sim.state.set_faults("acme/roleplay-1", "alpha", [{"kind": "http_error", "status": 503}])
    r = client.post("/chat/completions", json=body(stream=False, provider=pin("alpha")))
    assert r.status_code == 503 and r.headers["retry-after"] == "1"


def test_ignore_keeps_a_provider_out(client: httpx.Client, sim: RunningSimulator) -> None:
    for _ in range(4):
        r = client.post(
            "/chat/completions", json=body(provider={"ignore": ["bravo", "alpha"]}, stream=False)
        )
        assert r.status_code == 200
    # base slug "bravo" ignores bravo/fp8 but not the service-tier endpoint bravo/flex
    assert {e["provider"] for e in sim.state.requests()} <= {"bravo/flex", "charlie"}


def test_base_slug_in_only_matches_non_tier_endpoints(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    r = client.post(
        "/chat/completions", json=body(provider={"only": ["bravo"], "allow_fallbacks": False})
    )
    assert r.status_code == 200
    assert sim.state.requests()[-1]["provider"] == "bravo/fp8"


def test_only_that_leaves_nothing_is_404(client: httpx.Client) -> None:
    r = client.post("/chat/completions", json=body(provider={"only": ["Alpha"]}))
    assert r.status_code == 404  # display names are not slugs
    assert r.json()["error"]["code"] == 404


def test_require_parameters_drops_endpoints_lacking_a_sent_parameter(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    r = client.post(
        "/chat/completions",
        json=body(response_format=fmt, provider={**pin("bravo/fp8"), "require_parameters": True}),
    )
    assert r.status_code == 404  # bravo/fp8 has response_format but not structured_outputs
    r = client.post(
        "/chat/completions",
        json=body(
            response_format=fmt,
            provider={"order": ["bravo/fp8", "alpha"], "require_parameters": True},
        ),
    )
    assert r.status_code == 200
    assert sim.state.requests()[-1]["provider"] == "alpha"


def test_tools_never_route_to_an_endpoint_without_tools(client: httpx.Client) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    r = client.post("/chat/completions", json=body(tools=tools, provider=pin("bravo/fp8")))
    assert r.status_code == 404
    assert "tool use" in r.json()["error"]["message"]


def test_quantizations_filter(client: httpx.Client, sim: RunningSimulator) -> None:
    r = client.post("/chat/completions", json=body(provider={"quantizations": ["bf16"]}))
    assert r.status_code == 200
    assert sim.state.requests()[-1]["provider"] == "charlie"
    r = client.post("/chat/completions", json=body(provider={"quantizations": ["int4"]}))
    assert r.status_code == 404


def test_default_routing_prefers_the_cheapest(client: httpx.Client, sim: RunningSimulator) -> None:
    r = client.post("/chat/completions", json=body(stream=False))
    assert r.status_code == 200
    assert sim.state.requests()[-1]["provider"] == "bravo/flex"
