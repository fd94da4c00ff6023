"""Maintenance windows through the admin API: added, listed, shown, removed; audited; the same
errors as the exclusions'."""

from __future__ import annotations

from typing import Any

import pytest
from ops_seed import Api

UNTIL = "2026-05-01T16:00:00Z"  # the seeded clock stands at 12:00


def _add(api: Api, provider: str = "alpha", **extra: object) -> Any:
    body = {"model": api.model, "provider": provider, "reason": "planned upgrade", **extra}
    return api.client.post("/v1/maintenance", json={"until": UNTIL, **body}, headers=api.admin())


def test_a_window_is_added_listed_and_shown_but_never_published(api: Api) -> None:
    before = api.ignore()
    response = _add(api)
    assert response.status_code == 201
    window = response.json()
    assert window == {
        "id": window["id"], "model": api.model, "provider": "alpha",
        "reason": "planned upgrade", "until": UNTIL,
    }  # fmt: skip
    assert api.ignore() == before  # still usable capacity
    listed = api.client.get("/v1/maintenance", params={"model": api.model}).json()
    assert listed["model"] == api.model
    assert [(w["id"], w["layer"], w["provider"], w["until"]) for w in listed["maintenance"]] == [
        (window["id"], "maintenance", "alpha", UNTIL)
    ]
    providers = api.client.get("/v1/providers", params={"model": api.model}).json()["providers"]
    [alpha] = [p for p in providers if p["provider"] == "alpha"]
    assert alpha["state"] != "excluded"
    assert [e["layer"] for e in alpha["exclusions"]] == ["maintenance"]
    page = api.client.get("/").text
    assert f"maintenance until {UNTIL}: planned upgrade" in page
    assert "maintenance window added" in page  # the latest decisions
    record = api.client.get("/v1/audit", params={"model": api.model}).json()["records"][0]
    assert (record["event"], record["actor"], record["provider"]) == (
        "maintenance_added", "api", "alpha",
    )  # fmt: skip
    assert record["detail"] == {"id": window["id"], "reason": "planned upgrade", "until": UNTIL}


def test_a_second_window_for_the_provider_is_409_while_the_first_is_in_force(api: Api) -> None:
    first = _add(api).json()["id"]
    again = _add(api)
    assert again.status_code == 409
    assert f"id {first}" in again.json()["error"] and "alpha" in again.json()["error"]


@pytest.mark.parametrize(
    ("extra", "status", "fragment"),
    [
        ({"until": "2026-04-01T00:00:00Z"}, 422, "future"),
        ({"until": None}, 422, "until"),
        ({"provider": "zulu"}, 404, "zulu"),
        ({"provider": "Not A Slug"}, 422, "slug"),
        ({"model": "nobody/none"}, 404, "nobody/none"),
    ],
)
def test_a_bad_window_is_refused_with_json(
    api: Api, extra: dict[str, object], status: int, fragment: str
) -> None:
    response = _add(api, **extra)
    assert response.status_code == status and fragment in response.json()["error"]
    listed = api.client.get("/v1/maintenance", params={"model": api.model}).json()
    assert listed["maintenance"] == []


def test_removing_a_window_ends_it_and_audits_the_reason(api: Api) -> None:
    window = _add(api, provider="charlie/fp8").json()["id"]
    path = f"/v1/maintenance/{window}"
    response = api.client.delete(path, params={"reason": "done"}, headers=api.admin())
    assert response.status_code == 200 and response.json() == {"id": window, "removed": True}
    listed = api.client.get("/v1/maintenance", params={"model": api.model}).json()
    assert listed["maintenance"] == []
    record = api.client.get("/v1/audit", params={"model": api.model}).json()["records"][0]
    assert (record["event"], record["detail"]["reason"]) == ("maintenance_removed", "done")
    again = api.client.delete(path, headers=api.admin())
    assert again.status_code == 404
    assert again.json()["error"] == f"no active maintenance window with id {window}"
    assert api.client.delete("/v1/maintenance/0", headers=api.admin()).status_code == 404
    assert api.client.delete("/v1/maintenance/abc", headers=api.admin()).status_code == 400


def test_an_oversized_window_body_is_413(api: Api) -> None:
    body = b'{"model": "m", "provider": "p", "reason": "' + b"x" * 70_000 + b'"}'
    headers = {**api.admin(), "Content-Type": "application/json"}
    response = api.client.post("/v1/maintenance", content=body, headers=headers)
    assert response.status_code == 413 and "larger than" in response.json()["error"]
