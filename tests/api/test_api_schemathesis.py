"""Schemathesis against the published OpenAPI document: no request it generates gets a 5xx,
and every answer conforms to the document (status codes, content types, schemas).

The schemathesis pytest plugin does not run under pytest 9, so each operation's strategy is
driven by Hypothesis directly (schemathesis' Python API).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from ops_seed import MODEL, POLICY, Api
from ops_seed import settings as api_settings
from quick import examples
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from canary.api.app import create_app
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store


def _operations() -> list[tuple[str, str]]:
    """Every operation of the document the app generates (an app over an unopened store)."""
    store = Store("sqlite://")
    app = create_app(
        api_settings("sqlite://"), store, IgnoreListService(store, (), [MODEL], POLICY)
    )
    paths = app.openapi()["paths"]
    store.dispose()
    return sorted((method.upper(), path) for path, item in paths.items() for method in item)


OPERATIONS = _operations()
CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def seeded_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'canary.db'}")
    store.upgrade()
    yield Api(store, model=MODEL)
    store.dispose()


@pytest.fixture(scope="module")
def api_schema(seeded_api: Api) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", seeded_api.app)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_server_error_and_answers_match_the_document(
    api_schema: schemathesis.BaseSchema, seeded_api: Api, method: str, path: str
) -> None:
    operation = api_schema[path][method]
    headers = seeded_api.admin() if method in ("POST", "DELETE") else None

    @given(case=operation.as_strategy())
    @settings(
        max_examples=examples(15),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call(headers=headers)
        assert response.status_code < 500 or (path, response.status_code) == ("/readyz", 503), (
            method, path, response.status_code, response.text[:300]
        )  # fmt: skip
        case.validate_response(response, checks=CHECKS)

    run()
