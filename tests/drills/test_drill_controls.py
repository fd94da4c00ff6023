"""Issue 30, end to end on SQLite and PostgreSQL: a filtered answer is a refusal look, never a
schema break (defect 4); a positive control is never capacity and is published in its own layer
(defect 5); a ``needs=`` list counts only the endpoints that can serve its needs (defect 11)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_runner import CliRunner
from drill_kit import LANGUAGES, TEXT_ONLY, drill, fault, provider, settings

from canary.cli.main import app
from canary.config.settings import ModelSettings

TOOLS = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs", "tools"]


def fleet(model: str, *providers: dict[str, Any]) -> dict[str, Any]:
    return {"seed": 11, "models": [{"id": model, "providers": list(providers)}], "timeline": []}


def with_control(model: str, **fields: Any) -> Any:
    return settings(model=ModelSettings(id=model, positive_controls=("ctl",), **fields))


def lines(result: Any, kind: str, tag: str | None = None) -> list[dict[str, Any]]:
    return [e for e in result.of_kind(kind) if tag is None or e["provider"] == tag]


def test_a_filtering_control_is_never_quarantined_for_its_schema_and_is_published_as_control(
    store_url: str, tmp_path: Path
) -> None:
    model = "acme/ctl-enforce"
    start = datetime.now(UTC) - timedelta(hours=2)  # the CLI reads the list at the real time
    result = drill(
        fleet(
            model,
            *(provider(t) for t in ("alpha", "bravo", "charlie")),
            provider("ctl", fault("content_filter")),
        ),
        3,
        base=with_control(model),
        database_url=store_url,
        start=start,
    )
    assert not lines(result, "quarantine")  # the demo quarantined its own control for schema
    for line in lines(result, "verdict", "ctl"):
        schema = line["contracts"]["schema"]
        assert (schema["result"], schema["reason"]) == ("inconclusive", "filtered")
        assert line["contracts"]["refusal"]["reason"] == "positive_control"
    assert not lines(result, "probe_weak")  # the control did filter: the probe proves something
    assert result.summary["ignore"][model] == ["ctl"]  # by its exact tag, as a control
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{store_url}"\nlanguages = {json.dumps(list(LANGUAGES))}\n'
        f'[[models]]\nid = "{model}"\npositive_controls = ["ctl"]\n'
    )
    cli = CliRunner()
    listed = cli.invoke(app, ["--config", str(config), "ignore-list", "-m", model, "--json"])
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.stdout)
    assert document["entries"] == [
        {"provider": "ctl", "name": "Ctl", "layer": "control",
         "reason": "positive control: known to filter", "since": None, "until": None}
    ]  # fmt: skip
    assert document["usable_endpoints"] == 3 and document["floor_breached"] is False
    status = cli.invoke(app, ["--config", str(config), "status", "-m", model, "--json"])
    assert status.exit_code == 0, status.output
    [views] = json.loads(status.stdout)["models"]
    [ctl] = [p for p in views["providers"] if p["provider"] == "ctl"]
    assert ctl["state"] == "excluded" and [e["layer"] for e in ctl["exclusions"]] == ["control"]


@pytest.mark.slow  # the count is tests/core's; drilled: the filtering control test
def test_would_quarantine_never_counts_the_control_usable(store_url: str) -> None:
    """The observe drill of the issue said ``usable: [a, b, c, ctl, g]`` (a control that refuses
    in prose and advertises no structured output: it is no candidate itself)."""
    model = "acme/ctl-observe"
    result = drill(
        fleet(
            model,
            *(provider(t) for t in ("a", "b", "c")),
            provider("ctl", fault("refusal"), supported_parameters=TEXT_ONLY),
            provider("g", fault("schema_break", how="missing_field")),
        ),
        2,
        mode="observe",
        base=with_control(model),
        database_url=store_url,
    )
    [would] = lines(result, "would_quarantine", "g")
    assert would["usable"] == ["a", "b", "c", "g"] and would["causes"] == ["schema"]
    assert result.summary["ignore"][model] == ["ctl"]


def test_an_unpublished_control_is_still_no_capacity_for_the_floor(store_url: str) -> None:
    """``publish_controls = false``: off the list, and still not counted usable, so quarantining
    g would leave one usable endpoint: the floor holds it."""
    model = "acme/ctl-hidden"
    result = drill(
        fleet(
            model,
            provider("a"),
            provider("ctl", fault("content_filter")),
            provider("g", fault("schema_break", how="missing_field")),
        ),
        2,
        base=with_control(model, publish_controls=False, capacity_floor=2),
        database_url=store_url,
    )
    [held] = lines(result, "floor_held", "g")
    assert held["usable"] == ["a", "g"]
    assert result.summary["ignore"][model] == []
    assert result.summary["floor_breached"] == []


@pytest.mark.slow  # the count is tests/core's; drilled: the filtering control test
def test_a_tools_list_counts_only_the_endpoints_that_advertise_tools(
    store_url: str, tmp_path: Path
) -> None:
    """Five endpoints, two advertise tools; the operator forces both out: the tools list must say
    it is breached, not count three endpoints that cannot call tools as usable."""
    model = "acme/needs-tools"
    capable = [provider(t, supported_parameters=TOOLS) for t in ("t1", "t2")]
    plain = [provider(t) for t in ("p1", "p2", "p3")]
    start = datetime.now(UTC) - timedelta(hours=1)  # the CLI reads the list at the real time
    drill(fleet(model, *capable, *plain), 1, base=settings(model=ModelSettings(id=model)),
          database_url=store_url, start=start)  # fmt: skip
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{store_url}"\nlanguages = {json.dumps(list(LANGUAGES))}\n'
        f'[[models]]\nid = "{model}"\n'
    )
    cli = CliRunner()

    def run(*args: str) -> str:
        out = cli.invoke(app, ["--config", str(config), *args])
        assert out.exit_code == 0, out.output
        return out.stdout

    def listed(*needs: str) -> dict[str, Any]:
        return dict(json.loads(run("ignore-list", "-m", model, "--json", *needs)))

    before = listed("--needs", "tools")
    assert (before["usable_endpoints"], before["floor_breached"]) == (2, False)
    assert listed()["usable_endpoints"] == 5
    for tag in ("t1", "t2"):
        run("exclude", "add", "-m", model, "-p", tag, "--reason", "incident", "--force")
    tools = listed("--needs", "tools")
    assert tools["ignore"] == ["t1", "t2"]
    assert (tools["usable_endpoints"], tools["floor_breached"]) == (0, True)
    full = listed()
    assert (full["usable_endpoints"], full["floor_breached"]) == (3, False)
