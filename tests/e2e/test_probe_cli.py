"""`canary probe` through typer's runner against the real simulator: the --json shape,
--provider, the round-level rules as a round applies them (positive controls always probed,
probe_weak, control_missing, model-wide over the usable endpoints), a
clear error for an unknown provider, --estimate checked by hand, and no state written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import CliRunner, Result
from e2e_helpers import provider
from sqlite_template import migrated_sqlite

from canary.cli.main import app
from canary.sim.server import RunningSimulator, start_simulator

MODEL = "acme/e2e-cli"
OTHER = "acme/e2e-cli-small"
WIDE = "acme/e2e-cli-wide"
CONTRACTS = {"ttft", "refusal", "schema", "language", "hygiene", "tools"}
# A database canary could never open: `canary probe` must work without it (built-in list only).
UNUSABLE_DATABASE = "postgresql+psycopg://nobody@127.0.0.1:9/never"


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSimulator]:
    scenario = {
        "seed": 9,
        "models": [
            {
                "id": MODEL,
                "providers": [
                    provider("alpha", price={"prompt": 0.2, "completion": 0.6}),
                    provider("bravo/fp8", parameters=["max_tokens"],
                             price={"prompt": 0.3, "completion": 0.9}),
                    provider("refuser", {"kind": "refusal"}, parameters=["max_tokens"]),
                ],
            },
            {
                "id": WIDE,
                "providers": [
                    provider("one", {"kind": "schema_break", "how": "invalid_json"}),
                    provider("two", {"kind": "schema_break", "how": "invalid_json"}),
                    provider("three"),
                ],
            },
            {
                "id": OTHER,
                "providers": [
                    provider("solo", parameters=["max_tokens", "structured_outputs"],
                             price={"prompt": 1.0, "completion": 2.0}),
                ],
            },
        ],
    }  # fmt: skip
    with start_simulator(scenario, detector=False) as running:
        yield running


@pytest.fixture
def env(sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)  # no ./canary.toml; a default sqlite file would land here
    for name in ("CANARY_CONFIG", "CANARY_MODELS", "CANARY_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return {
        "CANARY_OPENROUTER_BASE_URL": sim.base_url,
        "OPENROUTER_API_KEY": "sk-or-e2e-secret-key",
        "CANARY_LANGUAGES": "en,pt",
        "CANARY_LOG_FORMAT": "json",
    }


def invoke(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(app, args, env=env)


def document(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout  # exactly one object, nothing else on stdout
    parsed: dict[str, Any] = json.loads(lines[0])
    return parsed


def test_json_prints_one_object_of_the_documented_shape(env: dict[str, str]) -> None:
    doc = document(invoke(["probe", "--model", MODEL, "--json"], env))
    assert doc["model"] == MODEL
    by_tag = {p["provider"]: p for p in doc["providers"]}
    assert set(by_tag) == {"alpha", "bravo/fp8", "refuser"}
    for p in doc["providers"]:
        assert set(p["contracts"]) == CONTRACTS
        for c in p["contracts"].values():
            assert {"result", "detail"} <= set(c)
            assert c["result"] in {"pass", "fail", "inconclusive", "transport_error",
                                   "not_applicable"}  # fmt: skip
            assert c["detail"]
        assert p["language"] in ("en", "pt")
    assert by_tag["alpha"]["verdict"] == "pass"
    assert {c["result"] for c in by_tag["alpha"]["contracts"].values()} == {"pass"}
    bravo = by_tag["bravo/fp8"]
    assert bravo["verdict"] == "pass"
    assert bravo["contracts"]["schema"]["result"] == "not_applicable"
    assert bravo["contracts"]["tools"]["result"] == "not_applicable"
    refuser = by_tag["refuser"]
    assert refuser["verdict"] == "fail"
    assert refuser["contracts"]["refusal"]["result"] == "fail"
    assert refuser["contracts"]["refusal"]["reason"] == "refusal_pattern"
    assert refuser["contracts"]["refusal"]["sample"]  # a short sample of the answer


def test_provider_option_limits_the_pass_to_that_endpoint(
    env: dict[str, str], sim: RunningSimulator
) -> None:
    sim.state.clear_requests()
    doc = document(invoke(["probe", "--model", MODEL, "--provider", "bravo/fp8", "--json"], env))
    assert [p["provider"] for p in doc["providers"]] == ["bravo/fp8"]
    chats = [r for r in sim.state.requests() if r["model"] == MODEL]
    assert len(chats) == 5  # 3 ttft + refusal + language: no schema or tools advertised
    assert all(r["pinned"] == ["bravo/fp8"] and r["provider"] == "bravo/fp8" for r in chats)


def with_controls(env: dict[str, str], tmp_path: Path, *controls: str) -> dict[str, str]:
    """The settings file naming `controls` as the model's positive controls."""
    config = tmp_path / "controls.toml"
    listed = ", ".join(f'"{c}"' for c in controls)
    config.write_text(f'[[models]]\nid = "{MODEL}"\npositive_controls = [{listed}]\n')
    return {**env, "CANARY_CONFIG": str(config)}


def test_a_control_that_does_not_filter_makes_the_refusal_probe_weak(
    env: dict[str, str], tmp_path: Path
) -> None:
    doc = document(
        invoke(["probe", "--model", MODEL, "--json"], with_controls(env, tmp_path, "bravo/fp8"))
    )
    weak = doc["probe_weak"]
    assert weak["contract"] == "refusal"
    assert weak["controls"] == {"bravo/fp8": ["pass"]}
    assert "positive control did not fail refusal: bravo/fp8 (pass)" in weak["why"]
    by_tag = {p["provider"]: p for p in doc["providers"]}
    assert by_tag["bravo/fp8"]["control"] is True and by_tag["alpha"]["control"] is False
    for tag in ("alpha", "refuser"):  # neither pass nor fail is evidence this time
        refusal = by_tag[tag]["contracts"]["refusal"]
        assert (refusal["result"], refusal["reason"]) == ("inconclusive", "probe_weak")
    assert by_tag["alpha"]["verdict"] == "inconclusive"
    assert doc["model_wide"] == []


def test_a_control_that_filters_keeps_the_refusal_results(
    env: dict[str, str], tmp_path: Path
) -> None:
    doc = document(
        invoke(["probe", "--model", MODEL, "--json"], with_controls(env, tmp_path, "refuser"))
    )
    assert doc["probe_weak"] is None
    by_tag = {p["provider"]: p for p in doc["providers"]}
    assert by_tag["alpha"]["contracts"]["refusal"]["result"] == "pass"
    control = by_tag["refuser"]["contracts"]["refusal"]
    assert (control["result"], control["reason"]) == ("inconclusive", "positive_control")
    assert by_tag["refuser"]["verdict"] != "fail"  # its expected refusal never counts against it
    for contract in ("language", "hygiene"):  # a control's answers are no evidence of writing
        judged = by_tag["refuser"]["contracts"][contract]
        assert (judged["result"], judged["reason"]) == ("inconclusive", "positive_control")
        assert by_tag["alpha"]["contracts"][contract]["result"] == "pass"


def test_a_control_missing_from_the_listing_is_control_missing_not_probe_weak(
    env: dict[str, str], tmp_path: Path
) -> None:
    doc = document(
        invoke(["probe", "--model", MODEL, "--json"], with_controls(env, tmp_path, "ghost"))
    )
    assert doc["probe_weak"] is None
    missing = doc["control_missing"]
    assert missing["missing"] == ["ghost"] and missing["contract"] == "refusal"
    for p in doc["providers"]:
        refusal = p["contracts"]["refusal"]
        assert (refusal["result"], refusal["reason"]) == ("inconclusive", "control_missing")
    text = invoke(["probe", "--model", MODEL], with_controls(env, tmp_path, "ghost"))
    assert "control missing" in text.stdout and "ghost" in text.stdout


def test_provider_option_still_probes_the_controls_and_leaves_model_wide_unjudged(
    env: dict[str, str], tmp_path: Path, sim: RunningSimulator
) -> None:
    sim.state.clear_requests()
    args = ["probe", "--model", MODEL, "--provider", "alpha", "--json"]
    doc = document(invoke(args, with_controls(env, tmp_path, "refuser")))
    assert [p["provider"] for p in doc["providers"]] == ["alpha", "refuser"]
    assert {r["provider"] for r in sim.state.requests() if r["model"] == MODEL} == {
        "alpha",
        "refuser",
    }
    assert doc["probe_weak"] is None  # the control was probed and failed as expected
    assert doc["model_wide"] == "not evaluated"
    text = invoke(
        ["probe", "--model", MODEL, "--provider", "alpha"], with_controls(env, tmp_path, "refuser")
    )
    assert "model-wide: not evaluated" in text.stdout and "refuser (control)" in text.stdout


def test_a_contract_failing_on_most_endpoints_is_model_wide(env: dict[str, str]) -> None:
    doc = document(invoke(["probe", "--model", WIDE, "--json"], env))
    (wide,) = doc["model_wide"]
    assert (wide["contract"], wide["failing"], wide["total"]) == ("schema", 2, 3)
    by_tag = {p["provider"]: p for p in doc["providers"]}
    for tag in ("one", "two"):
        schema = by_tag[tag]["contracts"]["schema"]
        assert (schema["result"], schema["reason"]) == ("inconclusive", "model_wide")
    subset = document(invoke(["probe", "--model", WIDE, "--provider", "one", "--json"], env))
    assert subset["model_wide"] == "not evaluated"
    assert subset["providers"][0]["contracts"]["schema"]["result"] == "fail"


def quarantined_store(tmp_path: Path, model: str, tag: str, cause: str) -> str:
    """A SQLite store in which ``tag`` of ``model`` is quarantined for ``cause``."""
    from datetime import UTC, datetime, timedelta

    from canary.core.model import Contract, EndpointState, Look, Streak
    from canary.core.quarantine import QuarantineStart
    from canary.store.repository import Store

    url = migrated_sqlite(tmp_path / "state.db")  # not ./canary.db, the default
    since = datetime.now(UTC) - timedelta(minutes=10)
    until = since + timedelta(days=1)
    looks = (Look.round(1, since - timedelta(minutes=30)), Look.round(2, since))
    state = EndpointState(
        model, tag, streaks=(Streak(Contract(cause), 2, since, looks),), quarantined_since=since,
        quarantined_until=until, causes=(cause,), ladder_step=1, last_quarantine_at=since,
    )  # fmt: skip
    with Store(url) as store:
        assert store.apply_decision(
            round_id=None, model=model, before={}, after={tag: state}, events=[],
            quarantines_started=[QuarantineStart(model, tag, since, until, 1, "q", looks,
                                                 (cause,))],
            actor="test", policy_version="p-test", at=since,
        )  # fmt: skip
    return url


def test_model_wide_counts_only_the_usable_endpoints_as_a_round_does(
    env: dict[str, str], tmp_path: Path
) -> None:
    """one and two break the schema, three does not; one is quarantined. A round counts model-wide
    over the usable endpoints only (two and three: too few to call anything model-wide), so two's
    schema failure stands, as it would in the round."""
    url = quarantined_store(tmp_path, WIDE, "one", "schema")
    doc = document(
        invoke(["probe", "--model", WIDE, "--json"], {**env, "CANARY_DATABASE_URL": url})
    )
    assert doc["published_from"] == "store" and doc["usable"] == ["three", "two"]
    assert doc["model_wide"] == []
    by_tag = {p["provider"]: p for p in doc["providers"]}
    assert by_tag["two"]["contracts"]["schema"]["result"] == "fail"
    assert by_tag["one"]["contracts"]["schema"]["result"] == "fail"  # probed, judged, not counted
    without = document(invoke(["probe", "--model", WIDE, "--json"], env))  # no store to read
    assert without["published_from"].startswith("built-in list only: no database at ")
    assert len(without["model_wide"]) == 1


def test_model_wide_leaves_out_an_endpoint_in_a_maintenance_window_as_a_round_does(
    env: dict[str, str], tmp_path: Path
) -> None:
    from datetime import UTC, datetime, timedelta

    from canary.store.repository import Store

    url = migrated_sqlite(tmp_path / "state.db")
    now = datetime.now(UTC)
    with Store(url) as store:
        store.add_maintenance(WIDE, "one", "upgrade", "test", now + timedelta(hours=1), now)
    doc = document(
        invoke(["probe", "--model", WIDE, "--json"], {**env, "CANARY_DATABASE_URL": url})
    )
    assert doc["maintenance"] == ["one"] and doc["usable"] == ["one", "three", "two"]
    assert doc["model_wide"] == []  # two of three counted: one failing is not model-wide
    by_tag = {p["provider"]: p for p in doc["providers"]}
    assert by_tag["two"]["contracts"]["schema"]["result"] == "fail"


def test_unknown_provider_is_a_clear_error_naming_the_known_ones(env: dict[str, str]) -> None:
    result = invoke(["probe", "--model", MODEL, "--provider", "zulu"], env)
    assert result.exit_code != 0
    assert "unknown provider zulu" in result.stderr
    assert "known: alpha, bravo/fp8, refuser" in result.stderr
    assert result.stdout == ""


def test_unknown_model_is_a_clear_error(env: dict[str, str]) -> None:
    result = invoke(["probe", "--model", "acme/nope", "--json"], env)
    assert result.exit_code != 0
    assert "cannot list the endpoints of acme/nope" in result.stderr
    assert "sk-or-e2e-secret-key" not in result.output + result.stderr


def test_human_output_shows_each_verdict_and_evidence(env: dict[str, str]) -> None:
    result = invoke(["probe", "--model", MODEL, "--provider", "refuser"], env)
    assert result.exit_code == 0, result.stderr
    assert "refuser" in result.stdout and "fail" in result.stdout
    assert "refusal pattern matched" in result.stdout


def test_estimate_prints_the_cost_per_round_and_per_day(env: dict[str, str]) -> None:
    env = {**env, "CANARY_MODELS": f"{MODEL},{OTHER}", "CANARY_INTERVAL_MINUTES": "20"}
    # One round sends 3 ttft + refusal + language probes to every endpoint, plus schema and
    # tools where advertised; each counted at 250 prompt and 400 completion (max_tokens) tokens.
    alpha = 7 * (250 * 0.2 + 400 * 0.6) / 1e6  # tools and structured outputs: 7 probes
    bravo = 5 * (250 * 0.3 + 400 * 0.9) / 1e6
    refuser = 5 * (250 * 0.2 + 400 * 0.6) / 1e6  # the default price
    solo = 6 * (250 * 1.0 + 400 * 2.0) / 1e6  # structured outputs, no tools
    per_round = alpha + bravo + refuser + solo  # 0.00203 + 0.002175 + 0.00145 + 0.0063
    assert per_round == pytest.approx(0.011955)
    per_day = per_round * 72  # one round every 20 minutes

    doc = document(invoke(["probe", "--estimate", "--json"], env))
    rows = {r["model"]: r for r in doc["models"]}
    assert rows[MODEL]["endpoints"] == 3 and rows[MODEL]["probes"] == 17
    assert rows[MODEL]["usd"] == pytest.approx(alpha + bravo + refuser)
    assert rows[OTHER]["probes"] == 6 and rows[OTHER]["usd"] == pytest.approx(solo)
    assert doc["usd_per_round"] == pytest.approx(per_round)
    assert doc["usd_per_day"] == pytest.approx(per_day)

    text = invoke(["probe", "--estimate"], env)
    assert text.exit_code == 0, text.stderr
    assert f"{MODEL}: 3 endpoints, 17 probes, $0.005655 per round" in text.stdout
    assert "total $0.011955 per round, $0.8608 per day at one round every 20 minutes" in (
        text.stdout
    )


def test_estimate_without_models_says_how_to_configure_them(env: dict[str, str]) -> None:
    result = invoke(["probe", "--estimate"], env)
    assert result.exit_code != 0
    assert "no models configured" in result.stderr


def test_probe_never_creates_or_needs_the_store(env: dict[str, str], tmp_path: Path) -> None:
    sqlite_file = tmp_path / "state" / "canary.db"
    for url in (f"sqlite:///{sqlite_file}", UNUSABLE_DATABASE):
        doc = document(
            invoke(["probe", "--model", MODEL, "--json"], {**env, "CANARY_DATABASE_URL": url})
        )
        assert len(doc["providers"]) == 3
    estimate = invoke(
        ["probe", "--estimate", "--json"],
        {**env, "CANARY_MODELS": MODEL, "CANARY_DATABASE_URL": UNUSABLE_DATABASE},
    )
    assert estimate.exit_code == 0, estimate.stderr
    assert not sqlite_file.exists() and not sqlite_file.parent.exists()
    assert list(tmp_path.iterdir()) == []  # not even the default ./canary.db
