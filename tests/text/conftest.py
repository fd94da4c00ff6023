from __future__ import annotations

from pathlib import Path

import pytest
from shared_data import CORPUS as SHARED_CORPUS

from canary.config.probe_set import ProbeSet, load_probes
from canary.config.settings import PROJECT_ROOT, SUPPORTED_LANGUAGES
from canary.text.detect import LanguageAnalyzer

# The shared corpus (test data only, never copied in): beside the checkout or CANARY_TEST_CORPUS.
CORPUS = SHARED_CORPUS.path


@pytest.fixture(scope="session")
def analyzer() -> LanguageAnalyzer:
    """The real lingua-backed analyzer over all supported languages (each model loads once,
    when a sentence first needs it)."""
    return LanguageAnalyzer(SUPPORTED_LANGUAGES)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not SHARED_CORPUS.present:
        pytest.skip(SHARED_CORPUS.reason)
    return CORPUS


@pytest.fixture(scope="session")
def probe_set() -> ProbeSet:
    """The repository's probe definitions (refusal patterns decide which answers are prose)."""
    return load_probes(PROJECT_ROOT / "probes", SUPPORTED_LANGUAGES)
