"""Where the tests find the shared test data that is not part of the repository.

A checkout has a ``shared/`` folder beside it on the project's machines (the multilingual
corpus, real OpenRouter captures); a fresh clone does not. Each data set is located here only,
from its variable or beside the checkout, and a test that needs an absent one skips with
:attr:`SharedData.reason`: the test run then sums those skips up in one line (tests/conftest.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SKIP_PREFIX = "shared test data absent: "
BESIDE = Path(__file__).resolve().parents[1].parent / "shared"


@dataclass(frozen=True)
class SharedData:
    name: str
    variable: str
    default: Path
    landmark: str  # what must be inside the folder for it to count as present

    @property
    def path(self) -> Path:
        return Path(os.environ.get(self.variable) or self.default)

    @property
    def present(self) -> bool:
        return (self.path / self.landmark).exists()

    @property
    def reason(self) -> str:
        return f"{SKIP_PREFIX}{self.name} ({self.variable})"


CORPUS = SharedData("the corpus", "CANARY_TEST_CORPUS", BESIDE / "corpus", "lingua-sentences")
CAPTURES = SharedData(
    "the OpenRouter captures", "CANARY_TEST_CAPTURES", BESIDE / "fixtures" / "openrouter", "stream"
)
DATA_SETS = (CORPUS, CAPTURES)

# Not data, but as absent from a fresh machine: the status page checks' browser (`.ci/run`
# installs it). Its checks skip with this reason, summed up in one line too.
CHROMIUM_ABSENT = "headless Chromium is not installed"
