"""Fixtures for the probe definitions and the contracts: the repository's probes/, observations."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from canary.core.model import Contract, Endpoint, Observation, Pricing, Transport
from canary.probes import ProbeSet, load_probes
from canary.settings import SUPPORTED_LANGUAGES

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
    fields.setdefault("transport", Transport.ok)
    return Observation(contract=contract, **fields)


@pytest.fixture
def obs() -> Callable[..., Observation]:
    return make_observation


def make_endpoint(*parameters: str, **fields: Any) -> Endpoint:
    fields.setdefault("model", "acme/roleplay-1")
    fields.setdefault("tag", "host/fp8")
    fields.setdefault("provider_name", "Host")
    fields.setdefault("pricing", Pricing(prompt=0.000001, completion=0.000002))
    return Endpoint(supported_parameters=tuple(parameters), **fields)


@pytest.fixture
def endpoint_of() -> Callable[..., Endpoint]:
    return make_endpoint
