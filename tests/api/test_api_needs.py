"""Lists per set of needs through the ASGI app against a real store (SQLite and PostgreSQL): the
capacity floor held on each variant itself, and a repeated ``needs`` parameter."""

from __future__ import annotations

from typing import Any

from ops_seed import Api, quarantine

from canary.core.model import Contract


def get(api: Api, **params: Any) -> Any:
    response = api.client.get("/v1/ignore-list", params={"model": api.model, **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_floor_is_held_on_each_needs_variant_itself(api: Api) -> None:
    """Seeded: bravo quarantined (hygiene), delta runtime, echo built-in; alpha, charlie/fp8 and
    foxtrot usable, floor 2. Now alpha is quarantined for the schema, then foxtrot for ttft:
    the full list withholds foxtrot (charlie/fp8 alone would be left). An app needing only
    tools can route to alpha, so foxtrot's quarantine costs it nothing below the floor: its list
    ignores foxtrot, with 2 usable, not 3 with foxtrot withheld."""
    quarantine(api, "alpha", Contract.schema, minutes_ago=20)
    quarantine(api, "foxtrot", Contract.ttft, minutes_ago=5)
    assert api.service.refresh()

    full = get(api)
    assert full["ignore"] == ["alpha", "bravo", "delta", "echo"]
    assert full["withheld"] == ["foxtrot"] and full["usable_endpoints"] == 2
    tools = get(api, needs="tools")
    assert tools["ignore"] == ["bravo", "delta", "echo", "foxtrot"]
    assert tools["withheld"] == [] and tools["usable_endpoints"] == 2
    assert tools["floor_breached"] is False and tools["needs"] == ["tools"]
    assert [e["provider"] for e in tools["entries"]] == ["bravo", "delta", "echo", "foxtrot"]
    both = get(api, needs="structured_outputs,tools")  # needs every capability: the full list
    assert (both["ignore"], both["withheld"]) == (full["ignore"], full["withheld"])


def test_a_repeated_needs_parameter_means_every_value(api: Api) -> None:
    quarantine(api, "alpha", Contract.schema, minutes_ago=20)
    assert api.service.refresh()
    response = api.client.get(
        "/v1/ignore-list?model=" + api.model + "&needs=tools&needs=structured_outputs"
    )
    assert response.status_code == 200
    doc = response.json()
    assert doc["needs"] == ["structured_outputs", "tools"] and "alpha" in doc["ignore"]
    joined = api.client.get(
        "/v1/ignore-list", params={"model": api.model, "needs": "structured_outputs,tools"}
    )
    assert response.headers["etag"] == joined.headers["etag"]
    mixed = api.client.get(f"/v1/ignore-list?model={api.model}&needs=tools&needs=vision")
    assert mixed.status_code == 400 and "vision" in mixed.json()["error"]
    blank = api.client.get(f"/v1/ignore-list?model={api.model}&needs=&needs=tools")
    assert blank.status_code == 200 and blank.json()["needs"] == ["tools"]


def test_a_needs_variant_answers_304_to_its_own_etag_and_never_to_the_full_lists(
    api: Api,
) -> None:
    def fetch(etag: str | None = None, **params: Any) -> Any:
        headers = {"If-None-Match": etag} if etag else {}
        return api.client.get(
            "/v1/ignore-list", params={"model": api.model, **params}, headers=headers
        )

    full, tools = fetch(), fetch(needs="tools")
    # the same entries (no quarantine is for a capability alone), yet each has its own ETag
    assert full.json()["ignore"] == tools.json()["ignore"]
    assert full.headers["etag"] != tools.headers["etag"]
    again = fetch(tools.headers["etag"], needs="tools")
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tools.headers["etag"]
    assert fetch(full.headers["etag"], needs="tools").status_code == 200
    assert fetch(tools.headers["etag"]).status_code == 200

    # alpha quarantined for the schema: the full list and the structured_outputs variant change,
    # the tools variant keeps its entries
    structured = fetch(needs="structured_outputs")
    quarantine(api, "alpha", Contract.schema, minutes_ago=5)
    assert api.service.refresh()
    assert fetch(full.headers["etag"]).status_code == 200
    assert fetch(structured.headers["etag"], needs="structured_outputs").status_code == 200
    now_tools = fetch(needs="tools")
    assert now_tools.json()["ignore"] == tools.json()["ignore"]
    assert "alpha" in fetch(needs="structured_outputs").json()["ignore"]
