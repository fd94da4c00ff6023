"""Several models in one ``GET /v1/ignore-list`` (``model=a&model=b``) through the ASGI app
against a real store (SQLite and PostgreSQL): one document per model, one ETag over them all."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import pytest
from ops_seed import POLICY, TOKEN, Clock, builtin, seed, settings
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store
from canary.store.rows import ModelLayers

_n = itertools.count(1)


class Flaky:
    """The store as the service reads it, which can be made unreachable."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.down = False

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return (ConnectionError, *self.store.errors)

    def model_layers(
        self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
    ) -> Mapping[str, ModelLayers]:
        if self.down:
            raise ConnectionError("the store is unreachable")
        return self.store.model_layers(models, now, figures_of=figures_of)


@dataclass
class Pair:
    first: str
    second: str
    service: IgnoreListService
    client: TestClient
    source: Flaky


@pytest.fixture
def pair(store: Store) -> Pair:
    n = next(_n)
    first, second = f"acme/multi-{n}a", f"acme/multi-{n}b"
    for model in (first, second):
        seed(store, model)
    source = Flaky(store)
    service = IgnoreListService(
        source, (*builtin(first), *builtin(second)), [first, second], POLICY, Clock()
    )
    assert service.refresh()
    app = create_app(settings(store.url, first, second), store, service, clock=Clock())
    return Pair(first, second, service, TestClient(app, raise_server_exceptions=True), source)


def url(*models: str, needs: str | None = None) -> str:
    query = "&".join(f"model={m}" for m in models)
    return f"/v1/ignore-list?{query}" + (f"&needs={needs}" if needs else "")


def test_several_models_answer_one_document_each_in_the_order_asked(pair: Pair) -> None:
    one_a = pair.client.get(url(pair.first))
    one_b = pair.client.get(url(pair.second))
    both = pair.client.get(url(pair.second, pair.first))
    assert both.status_code == 200 and both.headers["cache-control"] == "public, max-age=15"
    lists = both.json()["lists"]
    assert [d["model"] for d in lists] == [pair.second, pair.first]
    assert lists == [one_b.json(), one_a.json()]
    assert set(both.json()) == {"lists"}
    etag = both.headers["etag"]
    assert etag.startswith('W/"') and etag not in (one_a.headers["etag"], one_b.headers["etag"])


def test_one_model_answers_its_document_alone_and_a_repeat_counts_once(pair: Pair) -> None:
    alone = pair.client.get(url(pair.first))
    repeated = pair.client.get(url(pair.first, pair.first))
    assert "lists" not in alone.json() and alone.json()["model"] == pair.first
    assert repeated.content == alone.content and repeated.headers["etag"] == alone.headers["etag"]


def test_one_etag_over_all_of_them_304_and_a_change_in_any_moves_it(pair: Pair) -> None:
    first = pair.client.get(url(pair.first, pair.second))
    etag = first.headers["etag"]
    again = pair.client.get(url(pair.first, pair.second), headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    strong = etag.removeprefix("W/")
    weakly = pair.client.get(url(pair.first, pair.second), headers={"If-None-Match": strong})
    assert weakly.status_code == 304
    other_order = pair.client.get(url(pair.second, pair.first))
    assert other_order.headers["etag"] != etag  # another body: the order asked is kept
    assert pair.service.refresh()  # only generated_at moves: the tag stays
    assert pair.client.get(url(pair.first, pair.second)).headers["etag"] == etag
    added = pair.client.post(
        "/v1/exclusions",
        json={"model": pair.second, "provider": "alpha", "reason": "test", "force": True},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert added.status_code == 201, added.text
    assert pair.service.refresh()
    moved = pair.client.get(url(pair.first, pair.second), headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["etag"] != etag
    assert "alpha" in moved.json()["lists"][1]["ignore"]


def test_needs_apply_to_each_list(pair: Pair) -> None:
    both = pair.client.get(url(pair.first, pair.second, needs="tools")).json()["lists"]
    assert [d["needs"] for d in both] == [["tools"], ["tools"]]
    alone = pair.client.get(url(pair.second, needs="tools"))
    assert both[1] == alone.json()


def test_an_unknown_model_among_them_is_a_404_naming_the_known_ones(pair: Pair) -> None:
    response = pair.client.get(url(pair.first, "acme/nope"))
    assert response.status_code == 404
    body = response.json()
    assert "acme/nope" in body["error"] and body["known"] == sorted([pair.first, pair.second])
    blank = pair.client.get("/v1/ignore-list?model=" + pair.first + "&model=")
    assert blank.status_code == 400


def test_each_list_fails_static_with_the_store_unreachable(pair: Pair) -> None:
    fresh = pair.client.get(url(pair.first, pair.second)).json()["lists"]
    pair.source.down = True
    assert not pair.service.refresh()
    stale = pair.client.get(url(pair.first, pair.second)).json()["lists"]
    assert [d["stale"] for d in stale] == [True, True]
    assert [d["ignore"] for d in stale] == [d["ignore"] for d in fresh] != [[], []]
