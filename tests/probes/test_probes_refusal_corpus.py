"""Refusal patterns against real text: no false positive on the shared multilingual corpus."""

from __future__ import annotations

import pytest
from shared_data import CORPUS as SHARED_CORPUS

from canary.config.probe_set import ProbeSet
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.refusal import find_refusal

CORPUS = SHARED_CORPUS.path / "lingua-sentences"


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_no_corpus_sentence_reads_as_a_refusal(probe_set: ProbeSet, language: str) -> None:
    path = CORPUS / f"{language}.txt"
    if not SHARED_CORPUS.present:
        pytest.skip(SHARED_CORPUS.reason)
    patterns = probe_set.refusal_patterns(language)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 100
    matched = [(line, m.group(0)) for line in lines if (m := find_refusal(line, patterns))]
    assert matched == []
