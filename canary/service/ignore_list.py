"""The published ignore list: built from the store, served from memory, and failing static.

:class:`IgnoreListService` rebuilds every watched model's document (built-in + runtime +
quarantine layers, published by :func:`canary.core.floor.publish`, which holds the capacity
floor) and swaps the whole set in at once, only when the whole rebuild succeeded. When the store cannot be read, it keeps serving
the last good documents marked ``"stale": true``: never an empty or partial list because of an
error, since an empty list would silently re-admit every bad provider.

Between refreshes, an entry whose ``until`` has passed is dropped by re-merging the layers read
last time (no store access), so an expired quarantine does not outlive its end.

Each document's ETag is weak and covers everything the document says except ``generated_at``
(:func:`list_etag`): every replica gives the same tag for the same list, and a rebuild that only
moves ``generated_at`` (every refresh does) keeps it, so an app revalidating gets its 304.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.document import IgnoreDocument, ignore_document
from canary.core.floor import Publication
from canary.core.model import Exclusion
from canary.core.needs import publish_for_needs
from canary.core.profiles import Profile, UnknownProfile, publish_for_profile
from canary.store.rows import ModelLayers, NewDocument


class UnknownModel(LookupError):
    """The model is not watched; the message names the known ones."""

    def __init__(self, model: str, known: Collection[str]) -> None:
        self.model = model
        self.known = tuple(sorted(known))
        listed = ", ".join(self.known) or "none"
        super().__init__(f"unknown model {model!r} (known: {listed})")


class ListUnavailable(RuntimeError):
    """No good list was ever read from the store, so there is nothing honest to serve."""

    def __init__(self, model: str) -> None:
        self.model = model
        super().__init__(f"the ignore list of {model!r} has not been read from the store yet")


class LayerSource(Protocol):
    """What the service reads of the store: each model's listing and layers at once."""

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What "the store is unreachable" raises (anything else is a bug)."""
        ...

    def model_layers(
        self, models: Sequence[str], now: datetime, *, figures_of: Collection[str] = ()
    ) -> Mapping[str, ModelLayers]:
        """``figures_of``: the models whose 24 h figures to read too (those a profile covers)."""
        ...


DEFAULT_FLOOR = 2
# records the published documents given (those whose ETag the history lacks), at a time
Recorder = Callable[[Sequence[NewDocument], datetime], int]


def needs_key(needs: Collection[str]) -> str:
    """A needs variant's name in the history: its needs, sorted and comma-joined ("" for none)."""
    return ",".join(sorted(needs))


def variant_key(needs: Collection[str], profile: str | None = None) -> str:
    """A published variant's name in the history: :func:`needs_key` without a profile, else
    ``profile=NAME`` and, when ``needs=`` adds to its needs, ``&needs=...`` (as asked)."""
    if profile is None:
        return needs_key(needs)
    return f"profile={profile}" + (f"&needs={needs_key(needs)}" if needs else "")


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Published:
    """One model's served document, its canonical body and its (weak) ETag."""

    model: str
    document: IgnoreDocument
    body: bytes
    etag: str
    generated_at: datetime
    stale: bool
    next_change: datetime | None  # earliest `until` among the entries: re-merge after it
    publication: Publication
    layers: ModelLayers | None = None  # what it was published from (None for a needs variant)
    builtin: tuple[Exclusion, ...] = ()  # the model's built-in entries it was published with


def canonical_body(document: IgnoreDocument) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def list_etag(document: IgnoreDocument) -> str:
    """A weak ETag over everything ``document`` says except when it was built: the same on every
    replica and across refreshes while the list is the same. Weak (RFC 9110 8.8.1), since two
    bodies with one tag differ in ``generated_at``: they are equivalent, not byte-identical."""
    said = {key: value for key, value in document.items() if key != "generated_at"}
    canonical = json.dumps(said, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return 'W/"' + hashlib.sha256(canonical.encode()).hexdigest() + '"'


# a full list's ETag, layers, floor and controls: what its variants are cut from
_Source = tuple[str, ModelLayers | None, int, Controls]


@dataclass(frozen=True)
class _Snapshot:
    published: dict[str, Published]
    layers: dict[str, ModelLayers]
    read_at: datetime | None  # last successful rebuild
    stale: bool
    error: str | None


class IgnoreListService:
    """In-memory, fail-static ignore lists for the API and the CLI."""

    def __init__(
        self,
        store: LayerSource,
        builtin: Sequence[Exclusion],
        model_ids: Callable[[], Collection[str]] | Collection[str],
        policy_version: str,
        clock: Callable[[], datetime] = utc_now,
        floor_of: Callable[[str], int] = lambda model: DEFAULT_FLOOR,
        controls_of: Callable[[str], Controls] = lambda model: NO_CONTROLS,
        profiles: Sequence[Profile] = (),
        record: Recorder | None = None,
    ) -> None:
        """``record``: where each published document goes when its ETag changes (the daemon's
        store: ``GET /v1/ignore-list?at=T``), every needs and profile variant too."""
        self._store = store
        self._record = record
        self._recorded: dict[tuple[str, str], str] = {}  # (model, variant) -> ETag recorded
        self._recorded_from: dict[str, _Source] = {}  # model -> what its variants were cut from
        self._builtin = tuple(builtin)
        self._model_ids = model_ids
        self._floor_of = floor_of
        self._controls_of = controls_of
        self.policy_version = policy_version
        self._clock = clock
        self._lock = threading.Lock()  # one refresh at a time (it reads the store: may be slow)
        self._swap = threading.Lock()  # short: replacing the snapshot; never held during I/O
        self._snapshot = _Snapshot({}, {}, None, False, None)
        self._variants: dict[tuple[str, frozenset[str], str | None], tuple[Published, Published]]
        self._variants = {}
        self.profiles = {p.name: p for p in profiles}

    # -- reading ---------------------------------------------------------------------------

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted(self._snapshot.layers))

    @property
    def builtin(self) -> tuple[Exclusion, ...]:
        return self._builtin

    @property
    def stale(self) -> bool:
        return self._snapshot.stale

    @property
    def last_refresh_at(self) -> datetime | None:
        """When the store was last read successfully (None: never)."""
        return self._snapshot.read_at

    @property
    def last_error(self) -> str | None:
        return self._snapshot.error

    def published(
        self, model: str, needs: frozenset[str] = frozenset(), profile: str | None = None
    ) -> Published:
        """The model's published list; with ``needs``, the variant cut for an app with those
        needs; with ``profile``, that task profile's list (its needs and ``needs``). Each is
        built from the same snapshot: it fails static with the full list. Raises UnknownModel,
        ListUnavailable or :class:`UnknownProfile`."""
        base = self._published(model)
        chosen = None if profile is None else self.profiles.get(profile)
        if profile is not None and (chosen is None or not chosen.covers(model)):
            raise UnknownProfile(profile, model, [p.name for p in self.profiles.values() if p.covers(model)])  # fmt: skip
        if not needs and chosen is None:
            return base
        key = (model, needs, profile)
        cached = self._variants.get(key)
        if cached is not None and cached[0] is base:  # cut from this very publication
            return cached[1]
        variant = self._variant(base, needs, chosen)
        if len(self._variants) > 1024:
            self._variants.clear()
        self._variants[key] = (base, variant)
        return variant

    def _published(self, model: str) -> Published:
        snapshot = self._snapshot
        current = snapshot.published.get(model)
        if current is None:
            if model in self._current_model_ids_quietly(snapshot):
                raise ListUnavailable(model)
            raise UnknownModel(model, snapshot.layers or self._current_model_ids_quietly(snapshot))
        now = self._clock()
        if current.next_change is not None and now >= current.next_change:
            current = self._remerge(model, now)
        return current

    def document(
        self, model: str, needs: frozenset[str] = frozenset(), profile: str | None = None
    ) -> tuple[IgnoreDocument, str]:
        """The model's document and its ETag; raises UnknownModel, ListUnavailable or
        UnknownProfile."""
        published = self.published(model, needs, profile)
        return published.document, published.etag

    def age_s(self, model: str) -> float | None:
        snapshot = self._snapshot
        published = snapshot.published.get(model)
        if published is None:
            return None
        return max(0.0, (self._clock() - published.generated_at).total_seconds())

    # -- refreshing ------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Rebuild every model's document; on any error keep the last good ones, marked stale."""
        with self._lock:
            now = self._clock()
            try:
                models = sorted(set(self._resolve_model_ids()))
                held = [m for m in models if any(p.covers(m) for p in self.profiles.values())]
                layers = dict(self._store.model_layers(models, now, figures_of=held))
            except self._store.errors as exc:  # the store (or the model source) is unreachable
                self._mark_stale(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                return False
            published = {
                model: self._build(model, layers[model], now, now, False) for model in models
            }
            with self._swap:
                self._snapshot = _Snapshot(published, layers, now, False, None)
        if self._record is not None:
            self._record_changed(models, now)
        return True

    def _record_changed(self, models: Sequence[str], now: datetime) -> None:
        """Record, in one write, the documents whose ETag changed since last recorded (a store
        error is left for the next refresh: the served list never waits on its history). The
        variants are cut here, not through :meth:`published`: its cache is the requests'."""
        from canary.core.needs import KNOWN_NEEDS

        assert self._record is not None
        variants = [frozenset(c) for n in range(len(KNOWN_NEEDS) + 1)
                    for c in itertools.combinations(KNOWN_NEEDS, n)]  # fmt: skip
        changed: list[NewDocument] = []
        sources: dict[str, _Source] = {}
        for model in models:
            base = self.published(model)
            # Every variant is cut from the layers and the moment the full list was: while
            # neither its inputs nor its ETag moved, none of them did (none is rebuilt).
            source = (base.etag, base.layers, base.publication.floor, base.publication.controls)
            if self._recorded_from.get(model) == source:
                continue
            sources[model] = source
            profiles = [None, *(p for p in self.profiles.values() if p.covers(model))]
            for profile, needs in itertools.product(profiles, variants):
                cut = base if profile is None and not needs else self._variant(base, needs, profile)
                key = variant_key(needs, None if profile is None else profile.name)
                if self._recorded.get((model, key)) != cut.etag:
                    changed.append(NewDocument(model, key, cut.etag, json.loads(cut.body)))
        try:
            if changed:
                self._record(changed, now)
        except self._store.errors:
            return
        self._recorded.update({(d.model, d.variant): d.etag for d in changed})
        self._recorded_from.update(sources)

    def _resolve_model_ids(self) -> Collection[str]:
        source = self._model_ids
        return source() if callable(source) else source

    def _current_model_ids_quietly(self, snapshot: _Snapshot) -> Collection[str]:
        if snapshot.layers:
            return snapshot.layers.keys()
        try:
            return set(self._resolve_model_ids())
        except self._store.errors:
            return ()

    def _mark_stale(self, error: str) -> None:
        with self._swap:
            snapshot = self._snapshot
            now = self._clock()
            published = {
                model: self._build(model, snapshot.layers[model], now, item.generated_at, True)
                for model, item in snapshot.published.items()
            }
            self._snapshot = _Snapshot(published, snapshot.layers, snapshot.read_at, True, error)

    def _remerge(self, model: str, now: datetime) -> Published:
        """Drop ended entries from memory; called on the serving path, so it never waits on I/O."""
        with self._swap:
            snapshot = self._snapshot
            current = snapshot.published[model]
            if current.next_change is None or now < current.next_change:
                return current
            rebuilt = self._build(
                model, snapshot.layers[model], now, current.generated_at, current.stale
            )
            published = dict(snapshot.published)
            published[model] = rebuilt
            self._snapshot = _Snapshot(
                published, snapshot.layers, snapshot.read_at, snapshot.stale, snapshot.error
            )
            return rebuilt

    def _variant(
        self, base: Published, needs: frozenset[str], profile: Profile | None
    ) -> Published:
        """The list of an app with ``needs`` (or of a task profile), published on its own from
        the layers ``base`` was published from (same moment, same floor): the floor is held on
        the variant itself."""

        layers, full = base.layers, base.publication
        assert layers is not None, "a variant is cut from a full publication"
        cut = (base.model, layers.listing, base.builtin, layers.runtime, layers.quarantines)
        if profile is None:
            publication = publish_for_needs(
                *cut, needs=needs, floor=full.floor, now=full.at, controls=full.controls
            )
        else:
            publication = publish_for_profile(
                *cut, profile=profile, extra_needs=needs, measured=layers.measured,
                floor=full.floor, now=full.at, controls=full.controls,
            )  # fmt: skip
        document = ignore_document(
            publication,
            generated_at=base.generated_at,
            stale=base.stale,
            policy_version=self.policy_version,
            needs=needs if profile is None else (publication.needs or None),
            profile=profile,
        )
        body = canonical_body(document)
        return Published(
            model=base.model,
            document=document,
            body=body,
            etag=list_etag(document),
            generated_at=base.generated_at,
            stale=base.stale,
            next_change=base.next_change,  # every entry of the variant is one of base's layers
            publication=publication,
        )

    def _build(
        self, model: str, layers: ModelLayers, now: datetime, generated_at: datetime, stale: bool
    ) -> Published:
        builtin = tuple(e for e in self._builtin if e.model == model)
        publication = layers.publish(
            model, builtin, self._floor_of(model), now, controls=self._controls_of(model)
        )
        document = ignore_document(
            publication, generated_at=generated_at, stale=stale, policy_version=self.policy_version
        )
        ends = [e.until for e in (*publication.entries, *publication.withheld) if e.until]
        starts = [
            e.since
            for e in (*builtin, *layers.runtime, *layers.quarantines)
            if e.since and e.since > now
        ]
        changes = [*ends, *starts]
        body = canonical_body(document)
        return Published(
            model=model,
            document=document,
            body=body,
            etag=list_etag(document),
            generated_at=generated_at,
            stale=stale,
            next_change=min(changes) if changes else None,
            publication=publication,
            layers=layers,
            builtin=builtin,
        )
