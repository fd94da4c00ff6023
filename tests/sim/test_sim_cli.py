"""`canary sim` through typer's runner: a bad scenario stops it with one readable line."""

from __future__ import annotations

from pathlib import Path

from cli_runner import CliRunner

from canary.cli.main import app


def test_bad_scenario_stops_with_a_readable_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "models:\n  - id: acme/x\n    providers:\n      - tag: a\n"
        "        faults: [{kind: stall, after: 2}]\n"
    )
    result = CliRunner().invoke(app, ["sim", "--scenario", str(path)])
    assert result.exit_code == 2
    assert "unknown field 'models.0.providers.0.faults.0.stall.after'" in result.output
    assert "models.0.providers.0.faults.0" in result.output


def test_sim_help_lists_its_options() -> None:
    result = CliRunner().invoke(app, ["sim", "--help"])
    assert result.exit_code == 0
    assert "--scenario" in result.output and "--port" in result.output
