"""A fresh clone's test run: without the shared test data, the checks that need it are summed up
in one line naming the files and the variable to set (tests/conftest.py), not one skip each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_data import SKIP_PREFIX

pytestmark = pytest.mark.slow  # pytest in a process of its own

REPO = Path(__file__).resolve().parents[1]
NEEDS_CORPUS = "tests/probes/test_probes_refusal_corpus.py"  # one check per language: 17
NEEDS_CAPTURES = "tests/openrouter/test_openrouter_listing.py"
CAPTURED = f"{NEEDS_CAPTURES}::test_real_fixture_served_over_the_wire"


def test_absent_shared_data_is_one_line_naming_the_checks_and_the_variables(
    tmp_path: Path,
) -> None:
    corpus, captures = tmp_path / "no-corpus", tmp_path / "no-captures"
    env = {**os.environ, "CANARY_TEST_CORPUS": str(corpus), "CANARY_TEST_CAPTURES": str(captures)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", NEEDS_CORPUS, CAPTURED],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    summary = [line for line in lines if SKIP_PREFIX in line]
    assert summary == [
        f"{SKIP_PREFIX}skipped 18 checks: "
        f"17 that need the corpus (set CANARY_TEST_CORPUS to a copy; now {corpus}): "
        f"{NEEDS_CORPUS}; "
        f"1 that need the OpenRouter captures (set CANARY_TEST_CAPTURES to a copy; now "
        f"{captures}): {NEEDS_CAPTURES}"
    ], done.stdout
    assert not [line for line in lines if line.startswith("SKIPPED")], done.stdout
