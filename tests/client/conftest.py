"""A real loopback ignore-list server (http.server in a thread) that tests can switch to fail."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from canary.sim.server import RunningSimulator, start_simulator

MODEL = "acme/roleplay-1"


@dataclass
class Behaviour:
    """What the server answers; tests change it between calls."""

    ignore: list[str] = field(default_factory=lambda: ["bad-host"])
    stale: bool = False
    generated_at: str = "2026-11-29T10:00:00+00:00"
    mode: str = "ok"  # ok | status | garbage | not_object | wrong_model | hang
    status: int = 500
    usable: int | None = 3
    floor_breached: bool = False
    until: dict[str, str] = field(default_factory=dict)  # tag -> its entry's `until`
    cache_control: str = "no-cache"
    seen: list[dict[str, Any]] = field(
        default_factory=list
    )  # per request: path, model, if_none_match
    release: threading.Event = field(default_factory=threading.Event)  # ends a "hang"
    received: threading.Event = field(default_factory=threading.Event)  # set by every request


class IgnoreListServer:
    def __init__(self) -> None:
        self.behaviour = Behaviour()
        self.port = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        behaviour = self.behaviour
        behaviour.release.clear()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                url = urlparse(self.path)
                query = parse_qs(url.query)
                model = query.get("model", [None])[0]
                behaviour.seen.append(
                    {
                        "path": url.path,
                        "model": model,
                        "profile": query.get("profile", [None])[0],
                        "if_none_match": self.headers.get("If-None-Match"),
                    }
                )
                behaviour.received.set()
                if url.path != "/v1/ignore-list":
                    return self._send(404, b'{"error": "not found"}')
                if behaviour.mode == "hang":  # accept, then never answer (until stop())
                    behaviour.release.wait()
                    return None
                if behaviour.mode == "status":
                    return self._send(behaviour.status, b'{"error": "boom"}')
                if behaviour.mode == "garbage":
                    return self._send(200, b"<html>proxy error</html>")
                if behaviour.mode == "not_object":
                    return self._send(200, b'["bad-host"]')
                if model != MODEL:
                    return self._send(404, json.dumps({"error": f"unknown model {model}"}).encode())
                answered = "other/model" if behaviour.mode == "wrong_model" else model
                document = {
                    "model": answered,
                    "ignore": behaviour.ignore,
                    "provider": {"ignore": behaviour.ignore},
                    "entries": [
                        {
                            "provider": t,
                            "layer": "quarantine",
                            "reason": "test",
                            "since": None,
                            "until": behaviour.until.get(t),
                        }
                        for t in behaviour.ignore
                    ],
                    "usable_endpoints": behaviour.usable,
                    "floor_breached": behaviour.floor_breached,
                    "generated_at": behaviour.generated_at,
                    "stale": behaviour.stale,
                    "policy_version": "p1",
                }
                body = json.dumps(document, sort_keys=True).encode()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    return self._send(304, b"", etag)
                return self._send(200, body, etag)

            def _send(self, status: int, body: bytes, etag: str | None = None) -> None:
                self.send_response(status)
                if etag:
                    self.send_header("ETag", etag)
                self.send_header("Cache-Control", behaviour.cache_control)
                if status != 304:
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Close the listening socket: connections to the port are refused until start()."""
        if self._httpd is not None:
            self.behaviour.release.set()
            self._httpd.shutdown()
            self._httpd.server_close()
            assert self._thread is not None
            self._thread.join()
            self._httpd = None


@pytest.fixture
def server() -> Iterator[IgnoreListServer]:
    srv = IgnoreListServer()
    srv.start()
    yield srv
    srv.stop()


class FakeClock:
    """A monotonic clock moved by hand, and the wall clock that moves with it (``wall``): it
    starts at 2026-11-29T12:00Z, two hours after the test server's ``generated_at``."""

    WALL_START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return self.WALL_START + timedelta(seconds=self.now - 1000.0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def sim_scenario() -> dict[str, Any]:
    """Three hosts of MODEL, answering at once."""
    fast = {"ttft_ms": 1, "tokens_per_second": 8000}
    hosts = [("alpha", "Alpha"), ("bravo", "Bravo"), ("charlie", "Charlie")]
    providers = [{"tag": tag, "name": name, **fast} for tag, name in hosts]
    return {"seed": 3, "models": [{"id": MODEL, "providers": providers}]}


@pytest.fixture(scope="module")
def running_sim() -> Iterator[RunningSimulator]:
    with start_simulator(sim_scenario()) as sim:
        yield sim


@pytest.fixture
def sim(running_sim: RunningSimulator) -> RunningSimulator:
    """canary's OpenRouter simulator (`canary sim`), in-process over loopback, reset per test."""
    running_sim.state.reset()
    return running_sim
