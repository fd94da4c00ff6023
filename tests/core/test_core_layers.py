"""Merging the three exclusion layers and the published ignore document."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from core_builders import MODEL, T0

from canary.core.document import ignore_document
from canary.core.floor import publish
from canary.core.identity import Listed
from canary.core.layers import iso_utc, merge_layers
from canary.core.model import Exclusion, Layer

HOUR = timedelta(hours=1)


def ex(tag: str, layer: Layer, *, model: str = MODEL, **kw: Any) -> Exclusion:
    return Exclusion(model=model, tag=tag, layer=layer, reason=f"{layer.value} {tag}", **kw)


def test_merge_keeps_only_active_entries_of_the_model_sorted_by_tag_then_layer() -> None:
    merged = merge_layers(
        MODEL,
        builtin=[ex("zeta", Layer.builtin), ex("alpha", Layer.builtin, model="other/model")],
        runtime=[ex("beta", Layer.runtime, until=T0 + HOUR), ex("gone", Layer.runtime, until=T0),
                 ex("later", Layer.runtime, since=T0 + HOUR)],
        quarantines=[ex("beta", Layer.quarantine, since=T0 - HOUR, until=T0 + HOUR),
                     ex("expired", Layer.quarantine, since=T0 - 2 * HOUR, until=T0 - HOUR)],
        now=T0,
    )  # fmt: skip
    assert [(e.tag, e.layer) for e in merged] == [
        ("beta", Layer.runtime), ("beta", Layer.quarantine), ("zeta", Layer.builtin),
    ]  # fmt: skip


def test_an_entry_takes_the_layer_it_was_passed_in() -> None:
    [entry] = merge_layers(MODEL, [], [ex("a", Layer.builtin)], [], now=T0)
    assert entry.layer is Layer.runtime


def test_ignore_document_shape() -> None:
    publication = publish(
        MODEL,
        [Listed(t, name=t.upper()) for t in ("a", "b", "c", "d")],
        [ex("b", Layer.builtin)],
        [],
        [ex("a", Layer.quarantine, since=T0, until=T0 + timedelta(days=1), evidence=(3, 4)),
         ex("b", Layer.quarantine, since=T0, until=T0 + HOUR)],
        floor=2,
        now=T0,
    )  # fmt: skip
    doc = ignore_document(publication, generated_at=T0, stale=False, policy_version="p-0123456789")
    assert doc == {
        "model": MODEL,
        "ignore": ["a", "b"],
        "provider": {"ignore": ["a", "b"]},
        "entries": [
            {"provider": "a", "name": "A", "layer": "quarantine", "reason": "quarantine a",
             "since": "2026-01-05T12:00:00Z", "until": "2026-01-06T12:00:00Z"},
            {"provider": "b", "name": "B", "layer": "builtin", "reason": "builtin b",
             "since": None, "until": None},
            {"provider": "b", "name": "B", "layer": "quarantine", "reason": "quarantine b",
             "since": "2026-01-05T12:00:00Z", "until": "2026-01-05T13:00:00Z"},
        ],
        "withheld": [],
        "capacity_floor": 2,
        "usable_endpoints": 2,
        "floor_breached": False,
        "needs": None,
        "generated_at": "2026-01-05T12:00:00Z",
        "stale": False,
        "policy_version": "p-0123456789",
    }  # fmt: skip
    json.dumps(doc)  # serialisable as is


def test_empty_ignore_document_is_still_complete_and_can_be_stale() -> None:
    publication = publish(MODEL, None, [], [], [], floor=2, now=T0)
    doc = ignore_document(publication, generated_at=T0, stale=True, policy_version="p-x")
    assert doc["ignore"] == [] and doc["provider"] == {"ignore": []} and doc["stale"] is True
    assert doc["usable_endpoints"] is None and doc["floor_breached"] is False


def test_ignore_document_leaves_out_other_models() -> None:
    publication = publish(
        MODEL, [Listed("a")], [], [ex("a", Layer.runtime, model="x/y")], [], floor=1, now=T0
    )
    doc = ignore_document(publication, generated_at=T0, stale=False, policy_version="p-x")
    assert doc["ignore"] == [] and doc["entries"] == [] and doc["usable_endpoints"] == 1


def test_iso_utc_converts_offsets_and_takes_naive_as_utc() -> None:
    plus2 = datetime(2026, 1, 5, 16, 0, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(plus2) == "2026-01-05T14:00:00Z"
    assert iso_utc(datetime(2026, 1, 5, 12, 0)) == "2026-01-05T12:00:00Z"
    assert iso_utc(None) is None


def test_an_entry_is_named_by_the_display_name_of_what_it_names() -> None:
    from canary.core.identity import display_name

    listing = [
        Listed("deep/fp8", name="DeepInfra"),
        Listed("deep/turbo", name="DeepInfra"),
        Listed("mixed/a", name="Mixed A"),
        Listed("mixed/b", name="Mixed B"),
        Listed("bare"),
    ]
    assert display_name("deep/fp8", listing) == "DeepInfra"
    assert display_name("deep", listing) == "DeepInfra"  # a slug: the one name they share
    assert display_name("mixed", listing) is None  # several names: none is the slug's
    assert display_name("gone", listing) is None and display_name("bare", listing) is None
    assert display_name("deep", None) is None  # before the first listing
    assert Listed("a", name="A") == Listed("a")  # the name is shown, never matched on
