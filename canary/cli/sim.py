"""`canary sim`: serve the bundled OpenRouter simulator for a scenario file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from canary.cli.common import fail


def register(app: typer.Typer) -> None:
    @app.command("sim")
    def sim(
        scenario: Annotated[
            Path,
            typer.Option("--scenario", metavar="FILE", help="Scenario YAML file (see the README)."),
        ],
        host: Annotated[
            str, typer.Option("--host", metavar="HOST", help="Address to listen on.")
        ] = "127.0.0.1",
        port: Annotated[
            int, typer.Option("--port", metavar="PORT", help="Port to listen on.")
        ] = 8089,
    ) -> None:
        """Serve a local OpenRouter (under /api/v1) with the scenario's providers and faults."""
        from canary.sim.scenario import ScenarioError, load_scenario

        try:
            loaded = load_scenario(scenario)
        except ScenarioError as exc:
            fail(str(exc))
        from canary.sim.server import serve

        typer.echo(f"canary sim: http://{host}:{port}/api/v1 (control: http://{host}:{port}/_sim/)")
        serve(loaded, host, port)
