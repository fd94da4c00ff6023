"""Fixtures for the probe definitions and the contracts: the repository's probes/, observations."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import endpoint, observation

from canary.config.probe_set import ProbeSet, load_probes
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.model import Contract, Endpoint, Observation

PROBES_DIR = Path(__file__).resolve().parents[2] / "probes"


@pytest.fixture(scope="session")
def probe_set() -> ProbeSet:
    return load_probes(PROBES_DIR, SUPPORTED_LANGUAGES)


@pytest.fixture
def probes_copy(tmp_path: Path) -> Path:
    """A writable copy of the repository's probes/ to break on purpose."""
    target = tmp_path / "probes"
    shutil.copytree(PROBES_DIR, target)
    return target


def make_observation(contract: Contract, **fields: Any) -> Observation:
    fields.setdefault("tag", "host/fp8")
    return observation(contract, **fields)


@pytest.fixture
def obs() -> Callable[..., Observation]:
    return make_observation


def make_endpoint(*parameters: str, tag: str = "host/fp8", **fields: Any) -> Endpoint:
    return endpoint(tag, *parameters, price=0.000001, **fields)


@pytest.fixture
def endpoint_of() -> Callable[..., Endpoint]:
    return make_endpoint
