"""`canary round --now`: an extra round at once, recorded and shown, deciding nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import CliRunner
from e2e_helpers import provider

from canary.cli.main import app
from canary.sim.server import start_simulator
from canary.store.repository import Store

MODEL = "acme/e2e-now"


def test_extra_rounds_are_recorded_but_never_count_toward_a_quarantine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {"kind": "schema_break", "how": "missing_field"}
    scenario = {
        "seed": 5,
        "models": [
            {
                "id": MODEL,
                "providers": [
                    provider(t, parameters=["max_tokens", "response_format", "structured_outputs"])
                    for t in ("alpha", "charlie", "delta")
                ]
                + [
                    provider(
                        "bravo",
                        broken,
                        parameters=["max_tokens", "response_format", "structured_outputs"],
                    )
                ],
            }
        ],
    }
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    cli = CliRunner()
    with start_simulator(scenario, detector=False) as sim:
        env = {
            "CANARY_OPENROUTER_BASE_URL": sim.base_url,
            "OPENROUTER_API_KEY": "sk-or-e2e-secret-key",
            "CANARY_LANGUAGES": "en",
            "CANARY_MODELS": MODEL,
            "CANARY_DATABASE_URL": url,
            "CANARY_MODE": "enforce",
        }
        outputs = [cli.invoke(app, ["round", "--now"], env=env) for _ in range(3)]
        regular = cli.invoke(app, ["round"], env=env)
    assert regular.exit_code == 0, regular.output
    with Store(url) as store:
        # the scheduled round counts bravo's failure once: the extras before it counted nothing
        assert store.load_states(MODEL)["bravo"].failing_streak == 1
        assert store.quarantines(MODEL, active_only=False) == []
    for out in outputs:
        assert out.exit_code == 0, out.output
        assert "an extra round: decides nothing" in out.stdout
    with Store(url) as store:
        rounds = [r for r in store.recent_rounds(MODEL) if r.detail.get("extra")]
        assert len(rounds) == 3 and all(r.detail == {"extra": True} for r in rounds)
        assert all(r.status == "finished" for r in rounds)
        # judged and recorded, every time ...
        for r in rounds:
            assert store.round_verdicts(r.id)["bravo"].verdict.value == "fail"
        # ... but no decision was audited for them
        assert all(a.round_id not in {r.id for r in rounds} for a in store.audit(MODEL))
