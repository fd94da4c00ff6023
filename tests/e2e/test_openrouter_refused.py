"""A missing or rejected OpenRouter key must not look healthy (on SQLite and PostgreSQL).

The simulator demands its key, as OpenRouter does. A round whose every probe OpenRouter refused
(or could not take) is recorded so (``detail.probing`` on its row), is not a successful round
(the success timestamp does not move), makes ``canary round`` exit 1 naming the cause, counts
in ``canary_probe_transport_total{transport="auth_config"}`` and is named by ``/readyz``, which
stays ready. A model whose only provider is down still has a successful round: that is the
provider's problem. Without a key, ``serve``, ``round`` and ``probe`` refuse to start.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cli_runner import CliRunner
from e2e_helpers import provider
from pydantic import SecretStr
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.cli.main import app
from canary.config.settings import ModelSettings, OpenRouterSettings, Settings
from canary.core.model import Contract
from canary.core.plan import slot_of
from canary.openrouter.client import OpenRouterClient
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring, openrouter_client
from canary.service.ignore_list import IgnoreListService
from canary.service.ports import free_port
from canary.sim.server import RunningSimulator, start_simulator
from canary.store.repository import Store

KEY = "sk-or-v1-right-key-0123456789"
WRONG = "sk-or-v1-wrong-key-9876543210"
REFUSED = "acme/refused-1"  # two healthy providers: only the key can stop its probes
DOWN = "acme/down-1"  # its only provider answers 500 to everything
GONE = "acme/gone-1"  # OpenRouter itself cannot be reached
SCENARIO: dict[str, Any] = {
    "seed": 3,
    "api_key": KEY,
    "models": [
        {"id": REFUSED, "providers": [provider("alpha"), provider("bravo")]},
        {"id": DOWN, "providers": [provider("solo", {"kind": "http_error", "status": 500})]},
    ],
}
INTERVAL = timedelta(minutes=30)
runner = CliRunner()


def settings(url: str, sim: RunningSimulator | None, *models: str, key: str = KEY) -> Settings:
    base_url = sim.base_url if sim else f"http://127.0.0.1:{free_port()}/api/v1"
    return Settings(
        database_url=url,
        languages=("en",),
        ttft_samples=1,
        interval_minutes=30,
        models=tuple(ModelSettings(id=m) for m in models),
        openrouter=OpenRouterSettings(
            base_url=base_url, api_key=SecretStr(key), connect_timeout_s=0.5, listing_deadline_s=1
        ),
    )


def cli_env(url: str, sim: RunningSimulator, model: str, key: str | None) -> dict[str, str | None]:
    return {
        "CANARY_DATABASE_URL": url,
        "CANARY_OPENROUTER_BASE_URL": sim.base_url,
        "CANARY_MODELS": model,
        "CANARY_LANGUAGES": "en",
        "CANARY_TTFT_SAMPLES": "1",
        "CANARY_LOG_FORMAT": "json",
        "OPENROUTER_API_KEY": key,
        "CANARY_OPENROUTER_API_KEY": None,
        "OPENROUTER_API_KEY_FILE": None,
    }


def run_round(s: Settings, at: datetime) -> None:
    """One scheduled round of every model of ``s`` at ``at``'s slot, through the real runner."""
    wiring = build_wiring(s)

    async def go() -> None:
        async with openrouter_client(s) as client:
            await RoundRunner(wiring, client, clock=lambda: at).run(slot_of(at, 30))

    try:
        asyncio.run(go())
    finally:
        wiring.store.dispose()


class Served:
    """The API over the store, as a replica serves it, at ``now``."""

    def __init__(self, url: str, models: tuple[str, ...], now: datetime) -> None:
        self.store = Store(url)
        s = Settings(database_url=url, models=tuple(ModelSettings(id=m) for m in models))
        service = IgnoreListService(self.store, (), list(models), "p-test", lambda: now)
        service.refresh()
        self.client = TestClient(create_app(s, self.store, service, clock=lambda: now))

    def success_at(self, model: str) -> float | None:
        text = self.client.get("/metrics").text
        found = re.search(
            rf'^canary_last_round_success_timestamp_seconds\{{model="{model}"\}} (\S+)$',
            text,
            re.M,
        )
        return float(found.group(1)) if found else None

    def readyz(self) -> tuple[int, dict[str, Any]]:
        response = self.client.get("/readyz")
        body: dict[str, Any] = response.json()
        return response.status_code, body


def refused_probes() -> float:
    from canary.service.metrics import PROCESS

    return PROCESS.probe_transports.labels(transport="auth_config")._value.get()


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSimulator]:
    with start_simulator(SCENARIO, detector=False) as server:
        yield server


@pytest.fixture(autouse=True)
def _logging_back_to_stderr() -> Iterator[None]:
    """The commands point structlog at the CLI runner's stderr, which the runner then closes."""
    yield
    from canary.service.logs import configure_logging

    configure_logging()


def test_a_rejected_key_is_not_a_successful_round(store_url: str, sim: RunningSimulator) -> None:
    now = datetime.now(UTC)
    earlier = slot_of(now, 30) - INTERVAL
    run_round(settings(store_url, sim, REFUSED), earlier + timedelta(seconds=5))  # the right key
    with Store(store_url) as store:
        (good,) = store.recent_rounds(REFUSED)
        assert good.status == "finished" and "probing" not in good.detail
    assert good.finished_at is not None
    before = refused_probes()

    done = runner.invoke(app, ["round"], env=cli_env(store_url, sim, REFUSED, WRONG))

    assert done.exit_code == 1, done.output
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"canary: round not done: {REFUSED}: round finished: OpenRouter refused every probe "
        "(auth_config: HTTP 401: User not found.)"
    )
    with Store(store_url) as store:
        bad = store.recent_rounds(REFUSED)[0]
        verdicts = store.round_verdicts(bad.id)
    # recorded as such on the round, for every replica and across restarts
    assert bad.id != good.id and bad.status == "finished"
    assert bad.detail.get("probing") == "auth_config"
    assert {v.verdict.value for v in verdicts.values()} == {"transport_error"}
    assert refused_probes() - before >= 2  # one refused request per provider at least

    served = Served(store_url, (REFUSED,), now + timedelta(minutes=1))
    try:
        # the success timestamp stays at the last round whose probes reached a provider
        assert served.success_at(REFUSED) == good.finished_at.timestamp()
        status, body = served.readyz()
        assert status == 200 and body["ready"] is True  # it still serves the list
        assert body["probing"] == "auth_config" and body["probing_models"] == [REFUSED]
        metrics = served.client.get("/metrics").text
        assert re.search(
            r'^canary_probe_transport_total\{transport="auth_config"\} ', metrics, re.M
        )
    finally:
        served.store.dispose()


def test_a_model_whose_only_provider_is_down_still_has_a_successful_round(
    store_url: str, sim: RunningSimulator
) -> None:
    done = runner.invoke(app, ["round"], env=cli_env(store_url, sim, DOWN, KEY))
    assert done.exit_code == 0, done.output
    with Store(store_url) as store:
        (row,) = store.recent_rounds(DOWN)
        (verdict,) = store.round_verdicts(row.id).values()
    assert verdict.verdict.value == "transport_error"
    assert row.status == "finished" and "probing" not in row.detail
    served = Served(store_url, (DOWN,), datetime.now(UTC))
    try:
        assert row.finished_at is not None
        assert served.success_at(DOWN) == row.finished_at.timestamp()
        status, body = served.readyz()
        assert status == 200 and body["probing"] is None and body["probing_models"] == []
    finally:
        served.store.dispose()


def test_openrouter_unreachable_is_named_and_not_a_success(store_url: str) -> None:
    now = datetime.now(UTC)
    run_round(settings(store_url, None, GONE), now)  # nothing listens at its base URL
    with Store(store_url) as store:
        (row,) = store.recent_rounds(GONE)
    assert row.status == "abandoned" and row.detail.get("probing") == "unreachable"
    served = Served(store_url, (GONE,), now + timedelta(minutes=1))
    try:
        assert served.success_at(GONE) is None
        status, body = served.readyz()
        assert body["probing"] == "unreachable" and body["probing_models"] == [GONE]
    finally:
        served.store.dispose()


def test_a_probe_that_cannot_connect_says_it_never_reached_openrouter(
    sim: RunningSimulator,
) -> None:
    """The client marks a request that could not open a connection (the round's
    ``unreachable``), and only that one: an HTTP error came from OpenRouter."""

    async def probe(base_url: str) -> Any:
        async with OpenRouterClient(sim.base_url, KEY) as lister:
            (endpoint,) = await lister.list_endpoints(DOWN)
        async with OpenRouterClient(base_url, KEY, connect_timeout_s=0.5) as client:
            return await client.probe(
                endpoint, {"messages": [{"role": "user", "content": "hi"}]}, contract=Contract.ttft
            )

    nowhere = asyncio.run(probe(f"http://127.0.0.1:{free_port()}/api/v1"))
    answered = asyncio.run(probe(sim.base_url))
    assert (nowhere.status, nowhere.connected) == (None, False)
    assert (answered.status, answered.connected) == (500, True)


@pytest.mark.parametrize(
    "args",
    [["round"], ["serve", "--port", "0"], ["probe", "--model", REFUSED]],
    ids=["round", "serve", "probe"],
)
def test_without_a_key_the_probing_commands_refuse_in_one_line(
    args: list[str], store_url: str, sim: RunningSimulator
) -> None:
    done = runner.invoke(app, args, env=cli_env(store_url, sim, REFUSED, None))
    assert done.exit_code == 2
    assert done.stderr == (
        f"canary: `canary {args[0]}` needs an OpenRouter API key: set OPENROUTER_API_KEY (or "
        "OPENROUTER_API_KEY_FILE, or [openrouter] api_key in the settings file)\n"
    )
    assert done.stdout == ""


def test_the_estimate_needs_no_key(store_url: str, sim: RunningSimulator) -> None:
    done = runner.invoke(
        app, ["probe", "--estimate", "--json"], env=cli_env(store_url, sim, REFUSED, None)
    )
    assert done.exit_code == 0, done.output
    assert REFUSED in done.stdout
