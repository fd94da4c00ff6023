"""``canary drift`` through typer's runner, against a store a real drill filled (SQLite and
PostgreSQL).

The drill and the command share the store through CANARY_DATABASE_URL; the settings file is an
empty one in a temporary folder (plus one watched model that never drifted), so a developer's
./canary.toml cannot leak in.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cli_runner import CliRunner

from canary.cli.main import app
from canary.config.settings import MaxPrice, ModelSettings, Settings
from canary.core.model import iso_utc
from canary.rounds.drill import DRILL_START, DrillResult, run_drill

MODEL = "acme/drift-cli"
QUIET = "acme/drift-quiet"
JSON_KEYS = {"at", "round_id", "model", "provider", "field", "old", "new", "alert", "reason"}
PARAMS = ["max_tokens", "temperature", "seed", "response_format", "structured_outputs"]


def provider(tag: str, **changes: Any) -> dict[str, Any]:
    return {
        "tag": tag, "quantization": "fp8", "price": {"prompt": 0.2, "completion": 0.6},
        "supported_parameters": PARAMS, "ttft_ms": 5, "tokens_per_second": 5000, **changes,
    }  # fmt: skip


SCENARIO: dict[str, Any] = {
    "seed": 5,
    "models": [{"id": MODEL, "providers": [provider(t) for t in ("alpha", "bravo", "charlie")]}],
    "timeline": [
        {"round": 2, "model": MODEL, "provider": "alpha",
         "set": {"price": {"prompt": 3.0, "completion": 9.0}}},
        {"round": 2, "model": MODEL, "provider": "bravo", "set": {"context_length": 4096}},
        {"round": 3, "model": MODEL, "provider": "charlie", "remove": True},
        {"round": 3, "model": MODEL, "add": provider("delta")},
        {"round": 4, "model": MODEL, "provider": "bravo",
         "set": {"supported_parameters": ["max_tokens", "temperature", "seed", "tools"]}},
    ],
}  # fmt: skip
ROUNDS = 4
# (round, provider, field, alert) of every change, newest round first
CHANGES = {
    (2, "alpha", "pricing.prompt", True),
    (2, "alpha", "pricing.completion", True),
    (2, "bravo", "context_length", False),
    (3, "charlie", "presence", True),
    (3, "delta", "presence", False),
    (4, "bravo", "supported_parameters", True),
}

runner = CliRunner()


@dataclass(frozen=True)
class Filled:
    result: DrillResult
    url: str
    config: Path

    def invoke(self, *args: str, url: str | None = None) -> Any:
        return runner.invoke(
            app,
            ["--config", str(self.config), "drift", *args],
            env={"CANARY_DATABASE_URL": url or self.url},
            catch_exceptions=False,
        )

    def json(self, *args: str) -> list[dict[str, Any]]:
        out = self.invoke(*args, "--json")
        assert out.exit_code == 0, out.output
        records: list[dict[str, Any]] = json.loads(out.stdout)
        return records


def at_round(k: int) -> str:
    at = iso_utc(DRILL_START + (k - 1) * timedelta(minutes=30))
    assert at is not None
    return at


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, store_url: str) -> Filled:
    folder = tmp_path_factory.mktemp("drift-cli")
    url = store_url
    base = Settings(
        languages=("en",),
        ttft_samples=1,
        models=(ModelSettings(id=MODEL, max_price=MaxPrice(prompt=1.0, completion=2.0)),),
    )
    result = asyncio.run(run_drill(SCENARIO, ROUNDS, base, database_url=url))
    config = folder / "canary.toml"
    config.write_text(f'[[models]]\nid = "{QUIET}"\n', encoding="utf-8")
    return Filled(result, url, config)


@pytest.fixture(autouse=True)
def _logging_back_to_stderr() -> Iterator[None]:
    """The command points structlog at the runner's stderr, which the runner then closes."""
    yield
    from canary.service.logs import configure_logging

    configure_logging()


def test_json_lists_every_change_with_the_documented_keys(filled: Filled) -> None:
    records = filled.json("--model", MODEL)
    assert all(set(r) == JSON_KEYS for r in records)
    round_at = {at_round(k): k for k in range(1, ROUNDS + 1)}
    assert {(round_at[r["at"]], r["provider"], r["field"], r["alert"]) for r in records} == CHANGES
    assert len(records) == len(CHANGES)
    assert {r["model"] for r in records} == {MODEL}


def test_json_is_newest_first_and_matches_the_drill(filled: Filled) -> None:
    records = filled.json("--model", MODEL)
    assert [r["at"] for r in records] == sorted((r["at"] for r in records), reverse=True)
    printed = {
        (e["evidence"][0]["id"], e["provider"], e["field"], json.dumps(e["old"]), json.dumps(e["new"]),
         e["reason"])
        for e in filled.result.of_kind("drift")
    }  # fmt: skip
    listed = {
        (r["round_id"], r["provider"], r["field"], json.dumps(r["old"]), json.dumps(r["new"]),
         r["reason"])
        for r in records
    }  # fmt: skip
    assert listed == printed


def test_since_keeps_the_changes_at_or_after_it(filled: Filled) -> None:
    since = filled.json("--model", MODEL, "--since", at_round(3))
    assert {(r["provider"], r["field"]) for r in since} == {
        ("charlie", "presence"), ("delta", "presence"), ("bravo", "supported_parameters"),
    }  # fmt: skip
    # the same instant written with an offset, and naive (read as UTC)
    offset = (
        (DRILL_START + timedelta(minutes=60)).astimezone(timezone(timedelta(hours=2))).isoformat()
    )
    naive = (DRILL_START + timedelta(minutes=60)).replace(tzinfo=None).isoformat()
    assert filled.json("--model", MODEL, "--since", offset) == since
    assert filled.json("--model", MODEL, "--since", naive) == since
    assert filled.json("--model", MODEL, "--since", "2030-01-01T00:00:00Z") == []


def test_alerts_only(filled: Filled) -> None:
    alerts = filled.json("--model", MODEL, "--alerts")
    assert {(r["provider"], r["field"]) for r in alerts} == {
        (p, f) for _, p, f, alert in CHANGES if alert
    }
    assert all(r["alert"] and r["reason"] for r in alerts)


def test_limit_keeps_the_newest(filled: Filled) -> None:
    [newest] = filled.json("--model", MODEL, "--limit", "1")
    assert (newest["provider"], newest["field"]) == ("bravo", "supported_parameters")
    table = filled.invoke("--model", MODEL, "--limit", "1")
    assert table.exit_code == 0 and "limit reached" in table.stdout


def test_table_reads_like_a_change_log(filled: Filled) -> None:
    out = filled.invoke("--model", MODEL)
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert f"endpoint drift of {MODEL}" in text
    assert "0.2 → 3 USD/M tokens" in text and "prompt price 3 > cap 1 USD/M tokens" in text
    assert "4096" in text and "32768 → 4096" in text
    assert "vanished" in text and "appeared" in text
    assert "-response_format -structured_outputs +tools" in text
    assert "stopped advertising response_format, structured_outputs" in text
    assert "6 change(s), 4 alert(s)" in text
    # newest first: round 4's change is listed before round 2's
    assert text.index("supported_parameters") < text.index("pricing.prompt")


def test_unknown_model_names_the_known_ones(filled: Filled) -> None:
    out = filled.invoke("--model", "nobody/none")
    assert out.exit_code == 2
    assert "unknown model 'nobody/none'" in out.stderr
    assert MODEL in out.stderr and QUIET in out.stderr


def test_a_watched_model_without_drift_is_not_an_error(filled: Filled) -> None:
    assert filled.json("--model", QUIET) == []
    out = filled.invoke("--model", QUIET)
    assert out.exit_code == 0 and f"no endpoint drift recorded for {QUIET}" in out.stdout


def test_unreadable_since_is_refused(filled: Filled) -> None:
    out = filled.invoke("--model", MODEL, "--since", "yesterday")
    assert out.exit_code == 2 and "--since 'yesterday' is not an ISO-8601 time" in out.stderr


def test_a_store_without_the_schema_says_what_to_run(filled: Filled, tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    out = filled.invoke("--model", MODEL, url=f"sqlite:///{tmp_path / 'empty.db'}")
    assert out.exit_code == 1
    assert "cannot read the store" in out.stderr and "canary db upgrade" in out.stderr


def test_a_missing_store_is_one_line_and_is_not_created(filled: Filled, tmp_path: Path) -> None:
    out = filled.invoke("--model", MODEL, url=f"sqlite:///{tmp_path / 'absent.db'}")
    assert out.exit_code == 1
    assert out.stderr.startswith(f"canary: no database at {tmp_path / 'absent.db'} ")
    assert out.stderr.count("\n") == 1
    assert not (tmp_path / "absent.db").exists()


HEAVY = [
    "lingua", "httpx", "uvicorn", "starlette", "apscheduler", "openai", "openrouter",
    "prometheus_client", "schemathesis",
]  # fmt: skip
PROGRAM = """
import io, json, sys
from contextlib import redirect_stdout
from canary.cli.main import app
config, model, heavy = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
out = io.StringIO()
with redirect_stdout(out):
    app(["--config", config, "drift", "--model", model, "--json"], standalone_mode=False)
print(json.dumps({"rows": len(json.loads(out.getvalue())),
                  "heavy": sorted({m.split(".")[0] for m in sys.modules} & heavy)}))
"""


@pytest.mark.slow
def test_the_command_starts_without_anything_heavy(filled: Filled) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(filled.config), MODEL, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env={**os.environ, "CANARY_DATABASE_URL": filled.url},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"rows": len(CHANGES), "heavy": []}
