"""POST /v1/reports and GET /v1/reports: report tokens (never the admin token), the closed set of
symptoms, one report per generation id, rate limits (429 + Retry-After), notes for admins only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest
from ops_seed import POLICY, TOKEN, Api, builtin
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.config.settings import ProfileSettings, ReportSettings, ReportToken
from canary.service.ignore_list import IgnoreListService
from canary.store.rows import NewDocument

REPORTER = {"Authorization": "Bearer app-report-token"}


def reporting(api: Api, **limits: int) -> TestClient:
    """A client whose report token is named after the model (the store is shared by the
    module's tests, and a token's limit counts across models)."""
    tokens = (ReportToken(name=f"app-{api.model}", token="app-report-token"),)
    settings = api.settings.replace(reports=ReportSettings(tokens=tokens, **limits))
    return TestClient(create_app(settings, api.store, api.service, clock=api.clock))


@pytest.fixture
def client(api: Api) -> TestClient:
    return reporting(api)


def _post(client: TestClient, api: Api, **body: str) -> dict[str, object]:
    response = client.post("/v1/reports", json={"model": api.model, **body}, headers=REPORTER)
    return {"status": response.status_code, **response.json()}


def test_a_report_names_every_endpoint_its_provider_matches(client: TestClient, api: Api) -> None:
    made = _post(client, api, symptom="stray_tokens", provider="charlie", generation_id="gen-1")
    assert made["status"] == 201
    assert made["endpoints"] == ["charlie/fp8"] and made["contracts"] == ["hygiene"]
    assert made["outcome"] == "pending" and made["checks"] == []
    by_name = _post(client, api, symptom="other", provider="Alpha")  # the display name
    assert by_name["endpoints"] == ["alpha"]
    assert by_name["contracts"] == ["ttft", "refusal", "schema", "language", "hygiene", "tools"]


def test_one_report_per_generation_id(client: TestClient, api: Api) -> None:
    first = _post(client, api, symptom="refusal", provider="alpha", generation_id="gen-7")
    again = _post(client, api, symptom="empty", provider="bravo", generation_id="gen-7")
    assert (first["status"], again["status"]) == (201, 200)
    assert again["id"] == first["id"] and again["symptom"] == "refusal"


def test_unknown_symptoms_and_models_are_refused(client: TestClient, api: Api) -> None:
    bad = _post(client, api, symptom="too_boring", provider="alpha")
    assert bad["status"] == 400 and "unknown symptom 'too_boring'" in str(bad["error"])
    response = client.post(
        "/v1/reports", json={"model": "acme/nope", "symptom": "empty"}, headers=REPORTER
    )
    assert response.status_code == 404


def test_unattributed_reports_are_stored_with_the_reason_never_guessed(
    client: TestClient, api: Api
) -> None:
    nameless = _post(client, api, symptom="empty")
    unlisted = _post(client, api, symptom="empty", provider="zulu")
    resolving = _post(client, api, symptom="empty", generation_id="gen-9")
    assert nameless["outcome"] == unlisted["outcome"] == "unattributed"
    assert "no provider" in str(nameless["reason"]) and "'zulu'" in str(unlisted["reason"])
    assert resolving["outcome"] == "pending" and resolving["endpoints"] == []


def test_only_a_report_token_may_report(client: TestClient, api: Api) -> None:
    body = {"model": api.model, "symptom": "empty", "provider": "alpha"}
    for headers in ({}, api.admin(), {"Authorization": "Bearer wrong"}):
        assert client.post("/v1/reports", json=body, headers=headers).status_code == 401
    assert api.client.post("/v1/reports", json=body, headers=REPORTER).status_code == 403


def test_a_report_token_may_not_be_the_admin_token(api: Api) -> None:
    with pytest.raises(ValueError, match="admin token"):
        api.settings.replace(reports=ReportSettings(tokens=(ReportToken(name="x", token=TOKEN),)))


def test_bodies_are_capped(client: TestClient, api: Api) -> None:
    huge = {"model": api.model, "symptom": "empty", "note": "x" * 70_000}
    assert client.post("/v1/reports", json=huge, headers=REPORTER).status_code == 413


def test_per_token_limit_answers_429_and_stores_nothing(api: Api) -> None:
    client = reporting(api, per_token_per_minute=2, per_endpoint_per_minute=10)
    codes = [_post(client, api, symptom="empty", provider="alpha")["status"] for _ in range(3)]
    assert codes == [201, 201, 429]
    response = client.post(
        "/v1/reports", json={"model": api.model, "symptom": "empty"}, headers=REPORTER
    )
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
    assert len(api.store.reports(model=api.model)) == 2
    api.clock.now += timedelta(minutes=1)
    assert _post(client, api, symptom="empty", provider="alpha")["status"] == 201


def test_per_endpoint_limit_stores_the_report_rate_limited(api: Api) -> None:
    client = reporting(api, per_token_per_minute=50, per_endpoint_per_minute=2)
    answers = [_post(client, api, symptom="empty", provider="alpha") for _ in range(3)]
    assert [a["status"] for a in answers] == [201, 201, 429]
    assert answers[2]["report"]["outcome"] == "rate_limited"  # type: ignore[index]
    assert _post(client, api, symptom="empty", provider="foxtrot")["status"] == 201


def test_reports_dated_back_by_the_app_still_count_toward_the_limits(api: Api) -> None:
    client = reporting(api, per_token_per_minute=2, per_endpoint_per_minute=2)
    back = (api.clock.now - timedelta(hours=2)).isoformat().replace("+00:00", "Z")
    answers = [_post(client, api, symptom="empty", provider="alpha", at=back) for _ in range(3)]
    assert [a["status"] for a in answers] == [201, 201, 429]
    assert len(api.store.reports(model=api.model)) == 2


def test_notes_only_on_the_admin_api(client: TestClient, api: Api) -> None:
    _post(client, api, symptom="garbled_text", provider="alpha", note="user said: mojibake")
    public = client.get("/v1/reports", params={"model": api.model}).json()["reports"]
    admin = client.get("/v1/reports", params={"model": api.model}, headers=api.admin())
    assert public[0]["note"] is None  # never shown without the admin token
    assert admin.json()["reports"][0]["note"] == "user said: mojibake"
    page = client.get("/").text
    assert "Recent reports" in page and "garbled_text" in page and "mojibake" not in page


def test_reports_filter_by_outcome(client: TestClient, api: Api) -> None:
    _post(client, api, symptom="empty")
    _post(client, api, symptom="empty", provider="alpha")
    listed = client.get("/v1/reports", params={"model": api.model, "outcome": "unattributed"})
    assert [r["outcome"] for r in listed.json()["reports"]] == ["unattributed"]


def test_what_was_published_at_a_time_and_why(api: Api) -> None:
    """Every published document is recorded when its ETag changes (each needs and profile
    variant too)."""
    recorded: list[tuple[str, str, str]] = []

    def record(documents: Sequence[NewDocument], at: datetime) -> int:
        recorded.extend((d.model, d.variant, d.etag) for d in documents)
        return api.store.record_documents(documents, at)

    profiles = (
        ProfileSettings(name="json", needs=("structured_outputs",)).rules,
        ProfileSettings(name="elsewhere", models=("acme/other",)).rules,  # not this model's
    )
    service = IgnoreListService(
        api.store, builtin(api.model), [api.model], POLICY, api.clock, record=record,
        profiles=profiles,
    )  # fmt: skip
    assert service.refresh()
    needs = ["", "structured_outputs", "tools", "structured_outputs,tools"]
    assert sorted(v for _, v, _ in recorded) == sorted(
        [*needs, "profile=json", *(f"profile=json&needs={n}" for n in needs[1:])]
    )
    assert service.refresh() and len(recorded) == 8  # unchanged: nothing recorded again
    client = TestClient(create_app(api.settings, api.store, service, clock=api.clock))
    then = client.get("/v1/ignore-list", params={"model": api.model, "at": "2026-05-01T12:00:00Z"})
    assert then.status_code == 200
    body = then.json()
    assert body["document"]["ignore"] == api.ignore() and body["published_at"] == body["at"]
    reasons = {e["provider"]: e["reason"] for e in body["document"]["entries"]}
    assert "stray leading tokens" in reasons["echo"]  # why: each entry's layer and reason
    before = client.get("/v1/ignore-list", params={"model": api.model, "at": "2026-05-01T11:00Z"})
    assert before.status_code == 404
    bad = client.get("/v1/ignore-list", params={"model": api.model, "at": "yesterday"})
    assert bad.status_code == 400
    at = {"model": api.model, "at": "2026-05-01T12:00:00Z"}
    profiled = client.get("/v1/ignore-list", params={**at, "profile": "json"}).json()
    assert profiled["document"]["profile"]["name"] == "json"
    assert profiled["document"]["needs"] == ["structured_outputs"]
    assert "profile" not in body["document"]
    now = client.get("/v1/ignore-list", params={"model": api.model, "profile": "json"})
    assert profiled["etag"] == now.headers["etag"]  # the very document served then
    both = client.get("/v1/ignore-list", params={**at, "profile": "json", "needs": "tools"})
    assert both.json()["document"]["needs"] == ["structured_outputs", "tools"]
    unknown = client.get("/v1/ignore-list", params={**at, "profile": "elsewhere"})
    assert unknown.status_code == 404 and "profile 'elsewhere'" in unknown.json()["error"]


def test_a_report_on_an_endpoint_in_maintenance_is_stored_and_checks_nothing(
    client: TestClient, api: Api
) -> None:
    until = api.clock.now + timedelta(hours=2)
    api.store.add_maintenance(api.model, "foxtrot", "planned upgrade", "test", until, api.clock.now)
    made = _post(client, api, symptom="slow_first_token", provider="foxtrot")
    assert made["status"] == 201 and made["outcome"] == "in_maintenance"
    assert _post(client, api, symptom="slow_first_token", provider="alpha")["outcome"] == "pending"
