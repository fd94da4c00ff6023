from __future__ import annotations

import pytest


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model id of this test's own, so tests sharing a module's database never meet."""
    return f"acme/{request.function.__name__}"
