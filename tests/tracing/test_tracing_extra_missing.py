"""Without the ``canary[otel]`` extra: a configured ``[otel] endpoint`` stops start-up with one
line; an ambient ``OTEL_EXPORTER_OTLP_ENDPOINT`` alone is one warning, and canary serves.

The missing extra is simulated in a fresh interpreter: a meta-path finder makes every
``opentelemetry`` import fail, as it would without the packages, whether they are installed here
or not.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from polling import wait_for

from canary.service.ports import free_port

# each test starts `canary serve` in a fresh interpreter (the language models load before it listens)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

WRAPPER = """
import sys
from importlib.abc import MetaPathFinder


class WithoutOpenTelemetry(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, WithoutOpenTelemetry())
from canary.cli.main import main

sys.argv = ["canary", *sys.argv[1:]]
main()
"""


def test_serve_with_otel_configured_but_not_installed_stops_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "sqlite:///{tmp_path / "canary.db"}"\n'
        'log_format = "json"\n'
        '[otel]\nendpoint = "http://127.0.0.1:9"\n'
        '[[models]]\nid = "acme/traced-1"\n'
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENROUTER_API_KEY": "sk-or-traced"}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "--config", str(config), "serve", "--port",
         str(free_port())],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-800:]
    lines = [line for line in done.stderr.splitlines() if not line.startswith("{")]  # json logs
    assert lines == [
        "canary: traces are configured ([otel] endpoint) but the OpenTelemetry packages are not "
        "installed: pip install 'canary[otel]'"
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_an_ambient_otel_endpoint_without_the_extra_warns_once_and_serves(tmp_path: Path) -> None:
    """A platform that injects OTEL_EXPORTER_OTLP_ENDPOINT into every pod must not stop an image
    built without the extra: one warning, and canary runs without traces."""
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "sqlite:///{tmp_path / "canary.db"}"\n'
        'log_format = "json"\n'
        '[openrouter]\nbase_url = "http://127.0.0.1:9/api/v1"\n'
        '[[models]]\nid = "acme/traced-1"\n'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OPENROUTER_API_KEY": "sk-or-traced",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.observability:4318",
        # its first round retries the unreachable listing for half a minute: a stop need not
        # wait for that round (what is checked is the warning and a clean exit)
        "CANARY_SHUTDOWN_GRACE_S": "0",
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", WRAPPER, "--config", str(config), "serve", "--port",
             str(free_port())],
            env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:

        def listening() -> bool:
            if '"listening"' in log.read_text():
                return True
            if process.poll() is not None:  # it stopped before listening (a taken port, say)
                pytest.fail(f"canary serve exited {process.returncode}:\n{log.read_text()}")
            return False

        try:
            wait_for("canary serve to listen", listening, 60)
        except AssertionError as exc:
            pytest.fail(f"{exc}; its log:\n{log.read_text()}")
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = log.read_text().splitlines()
    assert code == 0, lines[-20:]
    events = [json.loads(line) for line in lines if line.startswith("{")]
    warnings = [e for e in events if e["event"] == "traces_unavailable"]
    assert len(warnings) == 1, lines
    assert warnings[0]["level"] == "warning"
    assert warnings[0]["variable"] == "OTEL_EXPORTER_OTLP_ENDPOINT"
    assert "collector.observability" not in json.dumps(warnings[0])
    assert not [line for line in lines if line.startswith("canary:") or "Traceback" in line]
