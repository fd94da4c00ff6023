from __future__ import annotations

from pathlib import Path

import pytest

from canary.probes import ProbeSet, load_probes
from canary.settings import PROJECT_ROOT, SUPPORTED_LANGUAGES
from canary.text.detect import LanguageAnalyzer

# The shared folder beside the repository checkout (test data only, never copied in).
CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


@pytest.fixture(scope="session")
def analyzer() -> LanguageAnalyzer:
    """The real lingua-backed analyzer over all supported languages (models load once)."""
    found = LanguageAnalyzer(SUPPORTED_LANGUAGES)
    found.warm()
    return found


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "lingua-sentences").is_dir():
        pytest.skip("the shared corpus is not beside the repository")
    return CORPUS


@pytest.fixture(scope="session")
def probe_set() -> ProbeSet:
    """The repository's probe definitions (refusal patterns decide which answers are prose)."""
    return load_probes(PROJECT_ROOT / "probes", SUPPORTED_LANGUAGES)
