"""Refusal patterns against real text: no false positive on the shared multilingual corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from canary.core.contracts.refusal import find_refusal
from canary.probes import ProbeSet
from canary.settings import SUPPORTED_LANGUAGES

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "lingua-sentences"


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_no_corpus_sentence_reads_as_a_refusal(probe_set: ProbeSet, language: str) -> None:
    path = CORPUS / f"{language}.txt"
    if not path.exists():
        pytest.skip(f"shared corpus not found at {path}")
    patterns = probe_set.refusal_patterns(language)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 100
    matched = [(line, m.group(0)) for line in lines if (m := find_refusal(line, patterns))]
    assert matched == []
