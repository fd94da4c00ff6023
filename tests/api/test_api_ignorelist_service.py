"""IgnoreListService on its own: atomic swaps, fail static, unknown models, expiry."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ops_seed import NOW, Clock

from canary.core.floor import FloorRecord
from canary.core.identity import Listed
from canary.core.model import Exclusion, Layer
from canary.service.ignore_list import IgnoreListService, ListUnavailable, UnknownModel, list_etag
from canary.store.rows import ModelLayers, NewDocument

M = "acme/one"


class LayerStore:
    """A stand-in for the store read the service makes; it can be told to fail on either half
    (runtime entries, then quarantines: a failure after the first half is a partial read)."""

    errors = (OSError,)  # what the store's "unreachable" looks like (ConnectionError among it)

    def __init__(self) -> None:
        self.runtime: list[Exclusion] = []
        self.quarantines: list[Exclusion] = []
        self.listing: tuple[Listed, ...] | None = None
        self.fail_on: str | None = None

    def model_layers(
        self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
    ) -> dict[str, ModelLayers]:
        out = {}
        for model in models:
            runtime = tuple(e for e in self.active_exclusions(model, now) if e.model == model)
            held = tuple(e for e in self.active_quarantines(model, now) if e.model == model)
            out[model] = ModelLayers(self.listing, runtime, held, FloorRecord())
        return out

    def active_exclusions(self, model: str | None, now: datetime) -> Sequence[Exclusion]:
        if self.fail_on == "runtime":
            raise ConnectionError("store down")
        return [e for e in self.runtime if e.active(now)]

    def active_quarantines(self, model: str | None, now: datetime) -> Sequence[Exclusion]:
        if self.fail_on == "quarantines":
            raise ConnectionError("store down")
        return [e for e in self.quarantines if e.active(now)]


def _q(tag: str, until: datetime, model: str = M) -> Exclusion:
    return Exclusion(
        model, tag, Layer.quarantine, "failed twice", since=NOW - timedelta(hours=1), until=until
    )


def test_nothing_is_served_before_the_first_successful_read() -> None:
    store = LayerStore()
    store.fail_on = "runtime"
    service = IgnoreListService(store, (), [M], "p-1", Clock())
    assert service.refresh() is False
    with pytest.raises(ListUnavailable):
        service.document(M)


def test_unknown_model_names_the_known_ones() -> None:
    service = IgnoreListService(LayerStore(), (), [M, "acme/two"], "p-1", Clock())
    service.refresh()
    with pytest.raises(UnknownModel, match=r"acme/one, acme/two") as info:
        service.document("acme/three")
    assert isinstance(info.value, LookupError)


def test_a_partial_failure_keeps_every_previous_document_whole() -> None:
    store = LayerStore()
    store.quarantines = [_q("bad", NOW + timedelta(days=1))]
    service = IgnoreListService(store, (), [M], "p-1", Clock())
    assert service.refresh()
    store.runtime = [Exclusion(M, "new", Layer.runtime, "incident")]
    store.fail_on = "quarantines"  # runtime read succeeds, then the second read fails
    assert service.refresh() is False
    doc, _ = service.document(M)
    assert doc["ignore"] == ["bad"] and doc["stale"] is True


def test_stale_changes_the_etag_and_recovery_restores_fresh() -> None:
    store = LayerStore()
    store.quarantines = [_q("bad", NOW + timedelta(days=1))]
    clock = Clock()
    service = IgnoreListService(store, (), [M], "p-1", clock)
    service.refresh()
    fresh_doc, fresh_etag = service.document(M)
    store.fail_on = "runtime"
    service.refresh()
    stale_doc, stale_etag = service.document(M)
    assert stale_etag != fresh_etag and stale_doc == {**fresh_doc, "stale": True}
    assert service.stale and "store down" in (service.last_error or "")
    store.fail_on = None
    assert service.refresh()
    doc, etag = service.document(M)
    assert doc == fresh_doc and etag == fresh_etag  # same clock, same data: same bytes


def test_the_etag_is_weak_and_a_rebuild_that_only_moves_generated_at_keeps_it() -> None:
    store = LayerStore()
    store.quarantines = [_q("bad", NOW + timedelta(days=1))]
    clock = Clock()
    service = IgnoreListService(store, (), [M], "p-1", clock)
    assert service.refresh()
    first = service.published(M)
    assert first.etag.startswith('W/"') and first.etag.endswith('"')
    clock.now += timedelta(seconds=15)  # housekeeping rebuilds the list from the same store
    assert service.refresh()
    again = service.published(M)
    assert again.document["generated_at"] != first.document["generated_at"]
    assert again.body != first.body and again.etag == first.etag
    store.runtime = [Exclusion(M, "new", Layer.runtime, "incident")]  # the list itself changes
    assert service.refresh()
    assert service.published(M).etag != first.etag


def test_two_replicas_built_at_different_times_give_one_etag_per_list_and_variant() -> None:
    store = LayerStore()
    store.quarantines = [_q("bad", NOW + timedelta(days=1))]
    early, late = Clock(), Clock(NOW + timedelta(seconds=7))
    one = IgnoreListService(store, (), [M], "p-1", early)
    two = IgnoreListService(store, (), [M], "p-1", late)
    assert one.refresh() and two.refresh()
    for needs in (frozenset(), frozenset({"tools"})):
        a, b = one.published(M, needs), two.published(M, needs)
        assert a.document["generated_at"] != b.document["generated_at"]
        assert a.etag == b.etag
    assert one.published(M).etag != one.published(M, frozenset({"tools"})).etag


def test_a_failing_model_source_also_fails_static() -> None:
    calls = {"n": 0}

    def models() -> list[str]:
        calls["n"] += 1
        if calls["n"] > 1:
            raise ConnectionError("store down")
        return [M]

    service = IgnoreListService(LayerStore(), (), models, "p-1", Clock())
    assert service.refresh() and not service.refresh()
    assert service.document(M)[0]["stale"] is True


def test_an_empty_list_that_the_store_says_is_current_is_served_fresh() -> None:
    service = IgnoreListService(LayerStore(), (), [M], "p-1", Clock())
    assert service.refresh()
    doc, _ = service.document(M)
    assert doc["ignore"] == [] and doc["stale"] is False


def test_entries_drop_at_their_end_between_refreshes_and_layers_start_on_time() -> None:
    store = LayerStore()
    clock = Clock()
    store.quarantines = [_q("bad", NOW + timedelta(hours=2))]
    starts_later = Exclusion(M, "later", Layer.builtin, "reviewed", since=NOW + timedelta(hours=1))
    service = IgnoreListService(store, (starts_later,), [M], "p-1", clock)
    service.refresh()
    assert service.document(M)[0]["ignore"] == ["bad"]
    clock.now = NOW + timedelta(hours=1)
    assert service.document(M)[0]["ignore"] == ["bad", "later"]
    clock.now = NOW + timedelta(hours=2)
    assert service.document(M)[0]["ignore"] == ["later"]


def test_builtin_entries_of_other_models_are_left_out() -> None:
    other = Exclusion("acme/other", "x", Layer.builtin, "reviewed")
    mine = Exclusion(M, "y", Layer.builtin, "reviewed")
    service = IgnoreListService(LayerStore(), (other, mine), [M], "p-1", Clock())
    service.refresh()
    assert service.document(M)[0]["ignore"] == ["y"]


def test_serving_never_waits_for_a_refresh_stuck_on_the_store() -> None:
    import threading

    class StuckStore(LayerStore):
        def __init__(self) -> None:
            super().__init__()
            self.entered, self.release = threading.Event(), threading.Event()
            self.stuck = False

        def active_exclusions(self, model: str | None, now: datetime) -> Sequence[Exclusion]:
            if self.stuck:
                self.entered.set()
                self.release.wait(30)
            return super().active_exclusions(model, now)

    store = StuckStore()
    store.quarantines = [_q("bad", NOW + timedelta(hours=1))]
    clock = Clock()
    service = IgnoreListService(store, (), [M], "p-1", clock)
    service.refresh()
    store.stuck = True
    refresher = threading.Thread(target=service.refresh)
    refresher.start()
    assert store.entered.wait(30)
    clock.now = NOW + timedelta(hours=1)  # an entry ends: serving re-merges from memory
    served: list[list[str]] = []
    reader = threading.Thread(target=lambda: served.append(service.document(M)[0]["ignore"]))
    reader.start()
    reader.join(5)
    stuck_while_serving = reader.is_alive()
    store.release.set()
    refresher.join(30)
    reader.join(30)
    assert not stuck_while_serving and served == [[]]


def test_the_served_list_holds_the_floor_and_says_when_it_is_breached() -> None:
    store = LayerStore()
    store.listing = (Listed("bad"), Listed("good"), Listed("spare"))
    store.quarantines = [_q("bad", NOW + timedelta(days=1))]
    service = IgnoreListService(store, (), [M], "p-1", Clock(), floor_of=lambda model: 2)
    service.refresh()
    doc, _ = service.document(M)
    assert doc["ignore"] == ["bad"] and doc["floor_breached"] is False
    store.listing = (Listed("bad"), Listed("good"))  # spare vanished: bad is withheld
    service.refresh()
    doc, _ = service.document(M)
    assert doc["ignore"] == [] and doc["withheld"] == ["bad"] and doc["usable_endpoints"] == 2
    store.runtime = [Exclusion(M, "good", Layer.runtime, "forced by an operator")]
    service.refresh()
    doc, _ = service.document(M)
    assert doc["ignore"] == ["good"] and doc["floor_breached"] is True


_tags = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}(/[a-z0-9]{1,4})?", fullmatch=True), max_size=4)
_times = st.datetimes(timezones=st.just(UTC)).map(lambda t: t.isoformat())


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, object]:
    ignore = draw(_tags)
    return {
        "model": draw(st.sampled_from(["acme/one", "acme/two"])),
        "ignore": ignore,
        "provider": {"ignore": ignore},
        "entries": [
            {
                "provider": t,
                "layer": draw(st.sampled_from(["builtin", "runtime", "quarantine"])),
                "reason": draw(st.text(max_size=12)),
                "since": None,
                "until": draw(_times | st.none()),
            }
            for t in ignore
        ],
        "withheld": draw(_tags),
        "capacity_floor": draw(st.integers(0, 5)),
        "usable_endpoints": draw(st.none() | st.integers(0, 9)),
        "floor_breached": draw(st.booleans()),
        "needs": draw(st.none() | st.just(["tools"])),
        "generated_at": draw(_times),
        "stale": draw(st.booleans()),
        "policy_version": draw(st.sampled_from(["p-1", "p-2"])),
    }


@given(_documents(), _documents(), _times, st.data())
def test_the_etag_tells_two_lists_apart_by_all_they_say_but_when_they_were_built(
    one: dict[str, Any], second: dict[str, Any], built: str, data: st.DataObject
) -> None:
    tag = list_etag(one)
    assert tag.startswith('W/"') and tag == list_etag({**one, "generated_at": built})
    said = data.draw(st.sampled_from(sorted(set(one) - {"generated_at"})))
    other = {**one, said: second[said]}  # the same list but for what it says in one field
    assert (list_etag(other) == tag) == (one[said] == second[said])


def test_a_variant_is_recorded_when_only_its_own_inputs_move() -> None:
    """The history skips a model whose full list and layers did not move, and not one whose 24 h
    figures moved a profile's list while the full list stayed the same."""
    from dataclasses import replace

    from canary.core.profiles import MIN_SAMPLES, Measured, Profile

    class Figures(LayerStore):
        measured: dict[str, Measured] = {}

        def model_layers(
            self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
        ) -> dict[str, ModelLayers]:
            read = super().model_layers(models, now, figures_of=figures_of)
            return {m: replace(layers, measured=dict(self.measured)) for m, layers in read.items()}

    store = Figures()
    store.listing = tuple(Listed(t) for t in ("alpha", "bravo", "charlie"))
    recorded: list[str] = []

    def record(documents: Sequence[NewDocument], at: datetime) -> int:
        recorded.extend(d.variant for d in documents)
        return len(documents)

    fast = Profile("fast", max_ttft_p95_s=2.0)
    service = IgnoreListService(store, (), [M], "p-1", Clock(), profiles=[fast], record=record)
    assert service.refresh() and len(recorded) == 8  # 4 needs variants, 4 of the profile
    assert service.refresh() and len(recorded) == 8  # nothing moved: nothing recorded
    plain = service.document(M)[1]
    store.measured = {"alpha": Measured(ttft_p95_s=5.0, ttft_samples=MIN_SAMPLES)}
    assert service.refresh() and service.document(M)[1] == plain  # the full list is the same
    assert sorted(recorded[8:]) == sorted(
        ["profile=fast", *(f"profile=fast&needs={n}" for n in ("structured_outputs", "tools",
                                                               "structured_outputs,tools"))]
    )  # fmt: skip
    assert service.document(M, profile="fast")[0]["ignore"] == ["alpha"]
