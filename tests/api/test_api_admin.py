"""Admin calls: bearer auth (401/403), release, runtime exclusions; audited, published at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ops_seed import Api, relist

ADMIN_CALLS = [
    ("post", "/v1/quarantines/release", {"model": "acme/x", "provider": "bravo", "reason": "r"}),
    ("post", "/v1/exclusions", {"model": "acme/x", "provider": "bravo", "reason": "r"}),
    ("delete", "/v1/exclusions/1", None),
    ("post", "/v1/maintenance", {"model": "acme/x", "provider": "bravo", "reason": "r"}),
    ("delete", "/v1/maintenance/1", None),
]


def _call(api: Api, method: str, path: str, body: object, headers: dict[str, str]) -> object:
    if method == "delete":
        return api.client.delete(path, headers=headers)
    return api.client.post(path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_admin_calls_without_a_token_are_401(
    reader: Api, method: str, path: str, body: object
) -> None:
    response = _call(reader, method, path, body, {})
    assert response.status_code == 401  # type: ignore[attr-defined]
    assert response.headers["www-authenticate"] == "Bearer"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_admin_calls_with_a_wrong_token_are_401(
    reader: Api, method: str, path: str, body: object
) -> None:
    for header in (
        "Bearer wrong",
        "Basic czNjcmV0",
        "Bearer",
        reader.admin()["Authorization"] + "x",
    ):
        response = _call(reader, method, path, body, {"Authorization": header})
        assert response.status_code == 401, header  # type: ignore[attr-defined]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_admin_calls_are_403_when_no_token_is_configured(
    make_api: Callable[..., Api], method: str, path: str, body: object
) -> None:
    api = make_api(token="")
    response = _call(api, method, path, body, {"Authorization": "Bearer anything"})
    assert response.status_code == 403  # type: ignore[attr-defined]
    assert "no admin token" in response.json()["error"]  # type: ignore[attr-defined]


def test_release_lifts_the_quarantine_publishes_the_list_and_audits_the_reason(api: Api) -> None:
    assert "bravo" in api.ignore()
    response = api.client.post(
        "/v1/quarantines/release",
        json={"model": api.model, "provider": "bravo", "reason": "provider fixed its tokenizer"},
        headers=api.admin(),
    )
    assert response.status_code == 200 and response.json()["released"] is True
    assert api.ignore() == ["delta", "echo"]
    record = api.client.get("/v1/audit", params={"model": api.model}).json()["records"][0]
    assert (record["event"], record["actor"], record["provider"]) == ("release", "api", "bravo")
    assert record["detail"]["why"] == "manual"
    assert record["detail"]["reason"] == "provider fixed its tokenizer"


def test_releasing_a_provider_that_is_not_quarantined_is_404_naming_the_quarantined(
    api: Api,
) -> None:
    response = api.client.post(
        "/v1/quarantines/release",
        json={"model": api.model, "provider": "alpha", "reason": "x"},
        headers=api.admin(),
    )
    assert response.status_code == 404
    assert "'alpha'" in response.json()["error"] and "bravo" in response.json()["error"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 400),
        (b"[1, 2]", 422),
        (b'{"model": "m", "provider": "p"}', 422),
        (b'{"model": "m", "provider": "p", "reason": "   "}', 422),
        (b'{"model": 3, "provider": "p", "reason": "r"}', 422),
        (b'{"model": "m", "provider": "p", "reason": "' + b"x" * 600 + b'"}', 422),
    ],
)
def test_release_rejects_bad_bodies_with_4xx_json(api: Api, body: bytes, status: int) -> None:
    response = api.client.post(
        "/v1/quarantines/release",
        content=body,
        headers={**api.admin(), "Content-Type": "application/json"},
    )
    assert response.status_code == status
    assert response.json()["error"]


def test_release_of_an_unknown_model_is_404_naming_the_known(api: Api) -> None:
    response = api.client.post(
        "/v1/quarantines/release",
        json={"model": "nobody/none", "provider": "bravo", "reason": "x"},
        headers=api.admin(),
    )
    assert response.status_code == 404 and api.model in response.json()["known"]


def test_adding_an_exclusion_answers_201_with_its_id_and_publishes_it(api: Api) -> None:
    response = api.client.post(
        "/v1/exclusions",
        json={
            "model": api.model,
            "provider": "alpha",
            "reason": "incident 7",
            "until": "2026-05-03T00:00:00Z",
        },
        headers=api.admin(),
    )
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert isinstance(new_id, int)
    doc = api.client.get("/v1/ignore-list", params={"model": api.model}).json()
    alpha = [e for e in doc["entries"] if e["provider"] == "alpha"]
    assert alpha == [
        {"provider": "alpha", "name": "Alpha", "layer": "runtime", "reason": "incident 7",
         "since": "2026-05-01T12:00:00Z", "until": "2026-05-03T00:00:00Z"}
    ]  # fmt: skip
    record = api.client.get("/v1/audit", params={"model": api.model}).json()["records"][0]
    assert (record["event"], record["actor"], record["detail"]["reason"]) == (
        "exclusion_added",
        "api",
        "incident 7",
    )


@pytest.mark.parametrize(
    ("until", "fragment"),
    [("2026-04-01T00:00:00Z", "future"), ("next tuesday", "ISO-8601"), ("", "non-empty")],
)
def test_adding_an_exclusion_rejects_a_bad_until_with_422(
    api: Api, until: str, fragment: str
) -> None:
    response = api.client.post(
        "/v1/exclusions",
        json={"model": api.model, "provider": "alpha", "reason": "x", "until": until},
        headers=api.admin(),
    )
    assert response.status_code == 422 and fragment in response.json()["error"]


def test_adding_an_exclusion_of_an_unknown_provider_is_404_naming_the_known(api: Api) -> None:
    response = api.client.post(
        "/v1/exclusions",
        json={"model": api.model, "provider": "zulu", "reason": "x"},
        headers=api.admin(),
    )
    assert response.status_code == 404
    assert "zulu" in response.json()["error"] and "alpha" in response.json()["error"]


def test_removing_an_exclusion_unpublishes_it_and_audits_the_reason(api: Api) -> None:
    exclusion_id = api.seeded.exclusion_id
    response = api.client.delete(
        f"/v1/exclusions/{exclusion_id}", params={"reason": "incident closed"}, headers=api.admin()
    )
    assert response.status_code == 200 and response.json() == {"id": exclusion_id, "removed": True}
    assert api.ignore() == ["bravo", "echo"]
    record = api.client.get("/v1/audit", params={"model": api.model}).json()["records"][0]
    assert (record["event"], record["detail"]["reason"]) == ("exclusion_removed", "incident closed")
    again = api.client.delete(f"/v1/exclusions/{exclusion_id}", headers=api.admin())
    assert again.status_code == 404


def test_removing_needs_an_integer_id(api: Api) -> None:
    response = api.client.delete("/v1/exclusions/abc", headers=api.admin())
    assert response.status_code == 400 and "integer" in response.json()["error"]


def test_an_oversized_body_is_413_and_changes_nothing(api: Api) -> None:
    body = b'{"model": "m", "provider": "p", "reason": "' + b"x" * 70_000 + b'"}'
    response = api.client.post(
        "/v1/exclusions", content=body, headers={**api.admin(), "Content-Type": "application/json"}
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]
    assert api.ignore() == ["bravo", "delta", "echo"]


def test_a_streamed_body_is_cut_off_at_the_cap_with_413(api: Api) -> None:
    chunks = (b'{"model": "m", "provider": "p", "reason": "', *[b"x" * 8192] * 10, b'"}')
    response = api.client.post(
        "/v1/exclusions",
        content=iter(chunks),  # no Content-Length: chunked
        headers={**api.admin(), "Content-Type": "application/json"},
    )
    assert response.status_code == 413 and "larger than" in response.json()["error"]


def test_an_exclusion_below_the_capacity_floor_is_409_unless_forced(api: Api) -> None:
    # alpha, charlie/fp8 and foxtrot are usable, floor 2: one more exclusion is fine, two is not
    def add(provider: str, **extra: object) -> object:
        body = {"model": api.model, "provider": provider, "reason": "incident", **extra}
        return api.client.post("/v1/exclusions", json=body, headers=api.admin())

    ok = add("alpha")
    assert ok.status_code == 201  # type: ignore[attr-defined]
    assert ok.json()["usable_after"] == 2  # type: ignore[attr-defined]
    refused = add("foxtrot")
    assert refused.status_code == 409  # type: ignore[attr-defined]
    message = refused.json()["error"]  # type: ignore[attr-defined]
    # the floor would hold only by withholding bravo's quarantine: refused all the same
    assert "would withhold the quarantine of bravo" in message and "floor of 2" in message
    assert "foxtrot" not in api.ignore()
    forced = add("foxtrot", force=True)
    assert forced.status_code == 201  # type: ignore[attr-defined]
    document = api.client.get("/v1/ignore-list", params={"model": api.model}).json()
    # bravo's quarantine is withheld: it gives the capacity back, and the floor holds
    assert document["withheld"] == ["bravo"] and "bravo" not in document["ignore"]
    assert document["floor_breached"] is False and document["usable_endpoints"] == 2
    [held] = api.store.audit(api.model, events=["floor_held"])
    assert held.tag == "bravo" and held.actor == "api"
    assert add("charlie/fp8", force=True).status_code == 201  # type: ignore[attr-defined]
    document = api.client.get("/v1/ignore-list", params={"model": api.model}).json()
    assert document["floor_breached"] is True and document["usable_endpoints"] == 1
    breaches = api.store.audit(api.model, events=["floor_breached"])
    assert len(breaches) == 1 and breaches[0].actor == "api"
    assert breaches[0].policy_version == api.service.policy_version
    [episode] = api.store.floor_episodes(api.model)
    assert episode.policy_version == api.service.policy_version
    assert episode.detail["action"]["tag"] == "charlie/fp8" and episode.detail["action"]["force"]


def test_a_provider_slug_is_weighed_against_the_floor_with_every_endpoint_it_names(
    api: Api,
) -> None:
    # deepinfra names two of the three listed endpoints: excluding it leaves 1, floor 2
    relist(api.store, api.model, ("alpha", "deepinfra/fp8", "deepinfra/turbo"), api.clock.now)
    assert api.service.refresh()

    def add(**extra: object) -> Any:
        body = {"model": api.model, "provider": "deepinfra", "reason": "incident", **extra}
        return api.client.post("/v1/exclusions", json=body, headers=api.admin())

    refused = add()
    assert refused.status_code == 409
    message = refused.json()["error"]
    assert "excluding deepinfra leaves 1 usable endpoint(s)" in message
    assert "(now 3)" in message and "floor of 2" in message
    assert "deepinfra" not in api.ignore()
    assert api.store.audit(api.model, events=["floor_breached"]) == []
    forced = add(force=True)
    assert forced.status_code == 201 and forced.json()["usable_after"] == 1
    document = api.client.get("/v1/ignore-list", params={"model": api.model}).json()
    assert "deepinfra" in document["ignore"]
    assert document["floor_breached"] is True and document["usable_endpoints"] == 1
    [episode] = api.store.floor_episodes(api.model)
    assert episode.detail["action"]["tag"] == "deepinfra" and episode.detail["action"]["force"]


def test_an_exclusion_of_a_provider_slug_names_every_endpoint_of_it(api: Api) -> None:
    body = {"model": api.model, "provider": "charlie", "reason": "whole provider"}
    response = api.client.post("/v1/exclusions", json=body, headers=api.admin())
    assert response.status_code == 201  # type: ignore[attr-defined]
    assert response.json()["usable_after"] == 2  # charlie/fp8 left the usable endpoints


@pytest.mark.parametrize("provider", ["Charlie", "charlie fp8", "CHARLIE/fp8"])
def test_an_exclusion_of_a_tag_that_is_not_a_lowercase_slug_is_422(api: Api, provider: str) -> None:
    body = {"model": api.model, "provider": provider, "reason": "r"}
    response = api.client.post("/v1/exclusions", json=body, headers=api.admin())
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert "lowercase" in response.json()["error"]  # type: ignore[attr-defined]


def test_force_must_be_a_boolean(api: Api) -> None:
    body = {"model": api.model, "provider": "alpha", "reason": "r", "force": "yes"}
    response = api.client.post("/v1/exclusions", json=body, headers=api.admin())
    assert response.status_code == 422  # type: ignore[attr-defined]
