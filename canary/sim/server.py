"""Run the simulator: in-process on a background thread (tests, drills, demo) or in front."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from pathlib import Path

import uvicorn
from pydantic import JsonValue

from canary.sim.app import build_app
from canary.sim.scenario import Scenario
from canary.sim.state import SimState
from canary.sim.stream import SimulatedDisconnect
from canary.sim.text import warm_up


class _QuietDisconnects(logging.Filter):
    """Drop uvicorn's traceback for the connections we abort on purpose (`disconnect` fault)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None:
            if isinstance(exc, SimulatedDisconnect):
                return False
            exc = exc.__cause__ or exc.__context__
        return True


def _quiet() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDisconnects) for f in logger.filters):
        logger.addFilter(_QuietDisconnects())


def _config(state: SimState, host: str, port: int, log_level: str) -> uvicorn.Config:
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    try:
        import httptools  # noqa: F401

        http = "httptools"
    except ImportError:
        http = "h11"
    return uvicorn.Config(
        build_app(state),
        host=host,
        port=port,
        loop=loop,
        http=http,
        access_log=False,
        log_level=log_level,
        lifespan="off",
        timeout_graceful_shutdown=1,
        backlog=4096,
    )


class RunningSimulator:
    """A simulator served by uvicorn on a background thread. Use as a context manager."""

    def __init__(self, state: SimState, host: str, port: int) -> None:
        self.state = state
        self.host = host
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        self._sock = sock
        self.port: int = sock.getsockname()[1]
        self._server = uvicorn.Server(_config(state, host, self.port, "warning"))
        self._thread = threading.Thread(
            target=self._run, name=f"canary-sim-{self.port}", daemon=True
        )
        self._error: BaseException | None = None

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/api/v1"

    def _run(self) -> None:
        try:
            if self._server.config.loop == "uvloop":
                import uvloop

                uvloop.run(self._server.serve(sockets=[self._sock]))
            else:
                asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as exc:  # surfaced by start()
            self._error = exc

    def start(self, timeout: float = 10.0, *, detector: bool = True) -> RunningSimulator:
        """``detector=False``: lingua is loaded on the first request that is not one of canary's
        prompts, if one comes (rounds, drills and the demo send only canary's prompts)."""
        _quiet()
        warm_up(self.state.bank, detector=detector)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            self.stop()
            raise RuntimeError(f"simulator did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        self.state.closing.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> RunningSimulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_simulator(
    scenario: Scenario | dict[str, JsonValue] | Path | str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    detector: bool = True,
) -> RunningSimulator:
    """Serve `scenario` on a background thread; port 0 picks a free port. ``detector``: load
    lingua now (see :meth:`RunningSimulator.start`)."""
    state = SimState(scenario)
    return RunningSimulator(state, host, port).start(detector=detector)


def serve(scenario: Scenario | dict[str, JsonValue] | Path | str, host: str, port: int) -> None:
    """Serve in the foreground until interrupted (the `canary sim` command)."""
    _quiet()
    state = SimState(scenario)
    warm_up(state.bank)
    config = _config(state, host, port, "info")
    uvicorn.Server(config).run()
