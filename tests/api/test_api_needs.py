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
