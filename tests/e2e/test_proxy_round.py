"""`canary round` through a real forward proxy (proxy.py, on loopback) to the simulator: set by
`[openrouter] proxy` or by the standard environment variables, every request goes through it and
the round judges as it would directly."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import CliRunner
from e2e_helpers import provider
from polling import wait_for

from canary.cli.main import app
from canary.core.model import Contract, Endpoint, Observation, Pricing, Transport
from canary.openrouter.client import ListingError, OpenRouterClient
from canary.openrouter.shapes import JSONObject
from canary.service.ports import free_port
from canary.sim.server import start_simulator
from canary.store.repository import Store

# proxy.py runs as a process of its own; a round through it takes a few seconds
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

MODEL = "acme/e2e-proxy"
PARAMETERS = ["max_tokens", "response_format", "structured_outputs"]
SCENARIO = {
    "seed": 5,
    "models": [
        {
            "id": MODEL,
            "providers": [provider(t, parameters=PARAMETERS) for t in ("alpha", "charlie")]
            + [
                provider(
                    "bravo", {"kind": "schema_break", "how": "missing_field"}, parameters=PARAMETERS
                )
            ],
        }
    ],
}
# proxy.py's access log: "<client> - <METHOD> <host:port><path> - <status> ..."
ACCESS = re.compile(r" - (GET|POST) (\S+) - (\d{3}) ")


@dataclass
class ForwardProxy:
    url: str
    log: Path

    def requests(self) -> list[tuple[str, ...]]:
        """(method, host and path, status) of each request logged (one per connection)."""
        return [m.groups() for m in ACCESS.finditer(_text(self.log))]


@pytest.fixture
def forward_proxy(tmp_path: Path) -> Iterator[ForwardProxy]:
    pytest.importorskip("proxy")
    log, port_file = tmp_path / "proxy.log", tmp_path / "proxy.port"
    command = [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0",
               "--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1",
               "--log-file", str(log)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = wait_for("proxy.py to listen", lambda: _text(port_file).strip(), 30)
        yield ForwardProxy(f"http://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(10)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def run_round(tmp_path: Path, sim_url: str, extra_env: dict[str, str]) -> str:
    """A `canary round`; `extra_env`'s proxy variables are set in both cases, all others unset."""
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    proxies = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env: dict[str, str | None] = {
        "CANARY_OPENROUTER_BASE_URL": sim_url,
        "OPENROUTER_API_KEY": "sk-or-e2e-proxy-secret",
        "CANARY_LANGUAGES": "en",
        "CANARY_MODELS": MODEL,
        "CANARY_DATABASE_URL": url,
        "CANARY_MODE": "enforce",
        # whatever this machine says, only what the test sets applies
        **dict.fromkeys(proxies + tuple(p.lower() for p in proxies)),
        **extra_env,
        **{k.lower(): v for k, v in extra_env.items() if k in proxies},
    }
    result = CliRunner().invoke(app, ["round"], env=env)
    assert result.exit_code == 0, result.output
    return url


def assert_judged(url: str) -> None:
    with Store(url) as store:
        (last,) = store.recent_rounds(MODEL, limit=1)
        assert last.status == "finished"
        verdicts = {t: v.verdict.value for t, v in store.round_verdicts(last.id).items()}
    assert verdicts == {"alpha": "pass", "bravo": "fail", "charlie": "pass"}


def test_a_round_goes_through_the_proxy_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy
) -> None:
    monkeypatch.chdir(tmp_path)
    with start_simulator(SCENARIO, detector=False) as sim:
        url = run_round(tmp_path, sim.base_url, {"CANARY_OPENROUTER_PROXY": forward_proxy.url})
        host = sim.base_url.split("://", 1)[1]
    assert_judged(url)
    seen = wait_for("the proxy's access log", forward_proxy.requests, 10)
    assert ("GET", f"{host}/models/{MODEL}/endpoints", "200") in seen
    assert ("POST", f"{host}/chat/completions", "200") in seen
    assert {target.split("/", 1)[0] for _, target, _ in seen} == {host.split("/", 1)[0]}


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY"])
def test_the_standard_proxy_variables_apply_and_no_proxy_bypasses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forward_proxy: ForwardProxy, variable: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with start_simulator(SCENARIO, detector=False) as sim:
        url = run_round(tmp_path, sim.base_url, {variable: forward_proxy.url})
        assert_judged(url)
        seen = wait_for("the proxy's access log", forward_proxy.requests, 10)
        bypassing = {variable: forward_proxy.url, "NO_PROXY": "127.0.0.1"}
        run_round(tmp_path, sim.base_url, bypassing)
        assert_judged(url)
    assert forward_proxy.requests() == seen  # NO_PROXY: nothing more went through it


def test_a_proxy_that_does_not_answer_leaves_openrouter_unreached() -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    async def go(base_url: str) -> tuple[ListingError, Observation]:
        endpoint = Endpoint(model=MODEL, tag="alpha", provider_name="Alpha", pricing=Pricing(0, 0))
        body: JSONObject = {"messages": [{"role": "user", "content": "Hi"}]}
        async with OpenRouterClient(base_url, "k", proxy=dead, listing_deadline_s=0.3) as client:
            with pytest.raises(ListingError) as failed:
                await client.list_endpoints(MODEL)
            return failed.value, await client.probe(endpoint, body, contract=Contract.ttft)

    with start_simulator(SCENARIO, detector=False) as sim:
        listing, observation = asyncio.run(go(sim.base_url))
        assert sim.state.requests() == []  # nothing reached the simulator around the proxy
    assert not listing.connected and listing.transport is Transport.provider_error
    assert not observation.connected and observation.error is not None
    assert observation.error.startswith("connect_error")


def test_a_tunnel_the_proxy_cannot_open_leaves_openrouter_unreached(
    forward_proxy: ForwardProxy,
) -> None:
    closed = f"https://127.0.0.1:{free_port()}/api/v1"  # the proxy's CONNECT there fails

    async def go() -> Observation:
        endpoint = Endpoint(model=MODEL, tag="alpha", provider_name="Alpha", pricing=Pricing(0, 0))
        body: JSONObject = {"messages": [{"role": "user", "content": "Hi"}]}
        async with OpenRouterClient(closed, "k", proxy=forward_proxy.url) as client:
            return await client.probe(endpoint, body, contract=Contract.ttft)

    observation = asyncio.run(go())
    assert not observation.connected and observation.status is None
    assert observation.error is not None and observation.error.startswith("proxy_error")
    assert observation.transport is Transport.provider_error
