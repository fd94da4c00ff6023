"""A configured ``[otel]`` without the ``canary[otel]`` extra stops start-up with one line.

The missing extra is simulated in a fresh interpreter: a meta-path finder makes every
``opentelemetry`` import fail, as it would without the packages, whether they are installed here
or not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from canary.net import free_port

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
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "--config", str(config), "serve", "--port",
         str(free_port())],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-800:]
    lines = [line for line in done.stderr.splitlines() if not line.startswith("{")]  # json logs
    assert lines == [
        "canary: traces are configured ([otel] endpoint or OTEL_EXPORTER_OTLP_*ENDPOINT) but the "
        "OpenTelemetry packages are not installed: pip install 'canary[otel]'"
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""
