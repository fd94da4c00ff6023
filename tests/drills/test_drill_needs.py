"""A list per set of needs, end to end: a host quarantined for the schema stays usable for an app
that never asks for structured output, and nobody else."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli_runner import CliRunner
from drill_kit import MODEL, drill, fault, provider, rounds_of, scenario

from canary.cli.main import app


def test_a_schema_quarantine_is_left_out_only_for_apps_that_need_no_structured_output(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'needs.db'}"
    broken = fault("schema_break", how="missing_field")
    fleet = scenario(
        *(provider(t) for t in ("alpha", "charlie", "delta")), provider("bravo", broken)
    )
    start = datetime.now(UTC) - timedelta(hours=1)  # the CLI reads the list at the real time
    result = drill(fleet, 2, database_url=url, start=start)
    [quarantine] = result.of_kind("quarantine")
    assert rounds_of(result, "quarantine", "bravo") == [2] and quarantine["causes"] == ["schema"]
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{url}"\nlanguages = ["en", "es"]\n[[models]]\nid = "{MODEL}"\n'
    )
    cli = CliRunner()

    def listed(*needs: str) -> list[str]:
        args = ["--config", str(config), "ignore-list", "-m", MODEL, "--json", *needs]
        out = cli.invoke(app, args)
        assert out.exit_code == 0, out.output
        return list(json.loads(out.stdout)["ignore"])

    assert listed() == ["bravo"]  # the full list: the safe default
    assert listed("--needs", "tools") == []
    assert listed("--needs", "structured_outputs") == ["bravo"]
    assert listed("--needs", "tools,structured_outputs") == ["bravo"]
    unknown = cli.invoke(
        app, ["--config", str(config), "ignore-list", "-m", MODEL, "--needs", "vision"]
    )
    assert unknown.exit_code == 2 and "structured_outputs, tools" in unknown.stderr
