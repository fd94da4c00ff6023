"""The helper's ``report(...)``, sync and async: from an answer's body, or from its generation id
resolved through OpenRouter's generation endpoint with the app's own key; end to end with the
official ``openrouter`` SDK against the simulator and canary's API."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from builders import endpoint

from canary.api.app import create_app
from canary.config.settings import ModelSettings, ReportSettings, ReportToken, Settings
from canary.service.ignore_list import IgnoreListService
from canary.sim.server import RunningSimulator
from canary.store.repository import Store
from canary_client.reports import AsyncReporter, Reporter, ReportRefused

MODEL = "acme/roleplay-1"
KEY = "sk-app"
TOKEN = "app-report-token"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def canary(sqlite_store: Store) -> httpx.ASGITransport:
    sqlite_store.record_snapshots(
        None, MODEL, [endpoint(t, model=MODEL) for t in ("alpha", "bravo", "charlie")], NOW,
    )  # fmt: skip
    settings = Settings(
        database_url=sqlite_store.url,
        models=(ModelSettings(id=MODEL),),
        reports=ReportSettings(tokens=(ReportToken(name="app", token=TOKEN),)),
    )
    service = IgnoreListService(sqlite_store, (), [MODEL], "p-test", lambda: NOW)
    service.refresh()
    return httpx.ASGITransport(create_app(settings, sqlite_store, service, clock=lambda: NOW))


def test_an_app_on_the_openrouter_sdk_reports_a_bad_answer_by_its_generation_id(
    sim: RunningSimulator, canary: httpx.ASGITransport
) -> None:
    from openrouter import OpenRouter

    sim.state.generation_lag_s = 0.0  # the shared simulator answers for a generation at once
    with OpenRouter(api_key=KEY, server_url=sim.base_url) as client:
        answer = client.chat.send(
            model=MODEL,
            messages=[{"role": "user", "content": "Hallo, weiter!"}],
            provider={"only": ["bravo"], "allow_fallbacks": False},
        )

    async def report() -> dict[str, Any]:
        async with AsyncReporter(
            "http://canary", TOKEN, model=MODEL, openrouter_key=KEY,
            openrouter_url=sim.base_url, transport=canary,
        ) as reporter:  # fmt: skip
            return await reporter.report(answer.id, symptom="stray_tokens", note="' ,' first")

    stored = asyncio.run(report())
    assert stored["generation_id"] == answer.id and stored["provider"] == "Bravo"
    assert stored["endpoints"] == ["bravo"] and stored["outcome"] == "pending"


def _canary_mock(seen: list[dict[str, Any]], status: int = 201) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if status == 429:
            return httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "7"})
        return httpx.Response(status, json={"id": 1, **seen[-1]})

    return httpx.MockTransport(answer)


def test_the_sync_helper_reads_the_answer_body_without_asking_openrouter() -> None:
    seen: list[dict[str, Any]] = []

    def never(request: httpx.Request) -> httpx.Response:
        raise AssertionError("the answer named its provider: OpenRouter is not asked")

    answer = {"id": "gen-1", "model": MODEL, "provider": "DeepInfra", "choices": []}
    with Reporter(
        "http://canary", TOKEN, openrouter_key=KEY, transport=_canary_mock(seen),
        openrouter_transport=httpx.MockTransport(never),
    ) as reporter:  # fmt: skip
        reporter.report(answer, symptom="wrong_language", language="pt")
    assert seen == [{"model": MODEL, "symptom": "wrong_language", "provider": "DeepInfra",
                     "generation_id": "gen-1", "language": "pt"}]  # fmt: skip


def test_the_sync_helper_retries_the_generation_endpoint_then_sends_the_id_alone() -> None:
    seen: list[dict[str, Any]] = []
    slept: list[float] = []
    not_yet = httpx.MockTransport(lambda r: httpx.Response(404, json={"error": "not found"}))
    with Reporter(
        "http://canary", TOKEN, model=MODEL, openrouter_key=KEY, transport=_canary_mock(seen),
        openrouter_transport=not_yet, sleep=slept.append,
    ) as reporter:  # fmt: skip
        reporter.report("gen-2", symptom="empty")
    assert seen == [{"model": MODEL, "symptom": "empty", "generation_id": "gen-2"}]
    assert 0 < sum(slept) <= 30 and len(slept) >= 3


def test_refusals_and_unknown_symptoms_are_errors() -> None:
    with Reporter("http://canary", TOKEN, model=MODEL, transport=_canary_mock([], 429)) as r:
        with pytest.raises(ReportRefused) as refused:
            r.report({"id": "gen-3", "provider": "Alpha"}, symptom="empty")
        assert refused.value.status == 429 and refused.value.retry_after_s == 7.0
        with pytest.raises(ValueError, match="unknown symptom"):
            r.report("gen-4", symptom="boring")
