"""The capacity floor, held on the published list. Pure.

``usable(model)`` is the number of listed endpoints that no published entry names
(:func:`canary.core.identity.usable`), leaving out the positive controls (hosts known to filter
are never capacity, published or not) and, on a list cut for needs, the endpoints that do not
advertise every need. Rules, each in one function:

1. :func:`publish` — the list apps receive: the built-in and runtime entries (human decisions,
   never withheld), the positive controls (layer ``control``, by exact tag, unless the model
   says ``publish_controls = false``; never withheld) and the quarantines. When usable falls
   below the floor, quarantine entries are withheld, most recent first, until the floor is met
   or none is left that would help (a quarantine of an endpoint that is not listed, that is not
   capacity, or that a fixed entry names too, gives no capacity back). On a task profile's list
   (:mod:`canary.core.profiles`) its requirement entries are preferences: they are withheld
   before any quarantine, an endpoint's entries together, the endpoints that miss the fewest
   requirements first, then by tag. ``breached`` is true whenever usable < floor even so.
2. :func:`reconcile` — what the store must record when a publication differs from what it
   remembers: a ``floor_held`` row per quarantine newly withheld, a ``republished`` row per one
   published again, and one ``floor_breached`` row opening an episode (closed by one
   ``floor_restored`` row when usable >= floor again).
3. :func:`check_exclusion` — an operator's exclusion, weighed on the list as :func:`publish` would
   publish it with the entry (withholding included), is refused unless forced when it lowers
   usable below the floor, or when it keeps the floor only by withholding a published quarantine
   (a human decision must not silently undo a quarantine); before the model's first listing every
   add must be forced. :func:`admit_exclusion` gives the rows an admitted one writes (its
   ``exclusion_added`` row, and what the floor does: a forced breach opens the episode with a row
   that describes the action); :func:`exclusion_removed` the row of a removal (always allowed).

Before a model's first listing nothing is known of its capacity: usable is None and the floor
is neither held nor breached.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from canary.core.controls import NO_CONTROLS, Controls
from canary.core.events import (
    Action,
    ExclusionAdded,
    ExclusionRemoved,
    FloorBreached,
    FloorRestored,
    MaintenanceRemoved,
    QuarantineWithheld,
    Republished,
)
from canary.core.identity import Listed, excluded_by, usable
from canary.core.layers import merge_layers
from canary.core.model import FIXED_LAYERS, EventKind, Exclusion, Layer


@dataclass(frozen=True)
class Publication:
    """One model's published list at ``at``, and the floor as it stands on it."""

    model: str
    at: datetime
    entries: tuple[Exclusion, ...]  # merged, active, withheld quarantines left out
    withheld: tuple[Exclusion, ...]  # requirement and quarantine entries held back by the floor
    listing: tuple[Listed, ...] | None  # the latest listing; None before the first listing
    usable: tuple[str, ...] | None  # tags of the capacity no published entry names
    floor: int
    controls: Controls = NO_CONTROLS  # the model's positive controls (never capacity)
    needs: frozenset[str] = frozenset()  # the list is cut for these: capacity must serve them

    @property
    def breached(self) -> bool:
        return self.usable is not None and len(self.usable) < self.floor

    @property
    def ignore(self) -> list[str]:
        return sorted({e.tag for e in self.entries})


def publish(
    model: str,
    listing: Sequence[Listed] | None,
    builtin: Sequence[Exclusion],
    runtime: Sequence[Exclusion],
    quarantines: Sequence[Exclusion],
    *,
    floor: int,
    now: datetime,
    controls: Controls = NO_CONTROLS,
    needs: Collection[str] = (),
    requirements: Sequence[Exclusion] = (),
) -> Publication:
    """The list of ``model`` at ``now``. ``controls``: its positive controls; ``needs``: the
    capabilities the list is cut for (capacity is then only what advertises them all; which
    quarantines apply is :mod:`canary.core.needs`'s to say); ``requirements``: a task profile's
    requirement entries."""
    cut = frozenset(needs)
    merged = merge_layers(
        model, builtin, runtime, quarantines, now, controls.entries(model), requirements
    )
    if listing is None:
        return Publication(model, now, merged, (), None, None, floor, controls, cut)
    fixed = [e for e in merged if e.layer in FIXED_LAYERS]
    missed: dict[str, list[Exclusion]] = {}
    for entry in merged:
        if entry.layer is Layer.requirement:
            missed.setdefault(entry.tag, []).append(entry)
    held = sorted((e for e in merged if e.layer is Layer.quarantine), key=_most_recent_first)
    groups = [*sorted(missed.values(), key=lambda g: (len(g), g[0].tag)), *([e] for e in held)]
    capacity = [e for e in listing if e.tag not in controls.tags and e.serves(cut)]
    by_tag = {e.tag: e for e in capacity}
    withheld: list[Exclusion] = []
    published = list(merged)
    left = usable(capacity, published, now)
    for group in groups:
        if len(left) >= floor:
            break
        endpoint = by_tag.get(group[0].tag)
        if endpoint is None or excluded_by(fixed, endpoint, now):
            continue  # withholding it would give no capacity back
        withheld.extend(group)
        for entry in group:
            published.remove(entry)
        left = usable(capacity, published, now)
    listed = tuple(sorted(listing, key=lambda e: e.tag))
    return Publication(
        model, now, tuple(published), tuple(withheld), listed, left, floor, controls, cut
    )


def _most_recent_first(entry: Exclusion) -> tuple[float, int, str]:
    since = entry.since.timestamp() if entry.since is not None else 0.0
    return (-since, -(entry.id or 0), entry.tag)


# --- what the store records ------------------------------------------------------------------


@dataclass(frozen=True)
class FloorRecord:
    """What the store remembers of a model's floor: withheld quarantine ids, an open episode."""

    withheld: Mapping[int, str] = field(default_factory=dict)  # quarantine id -> tag
    episode_open: bool = False


@dataclass(frozen=True)
class FloorChanges:
    """Each change with the audit row it writes; the store writes a row only if its change
    applied (a replica that sees the same change a moment later writes nothing)."""

    withhold: tuple[tuple[int, QuarantineWithheld], ...] = ()  # quarantine id to mark withheld
    republish: tuple[tuple[int, Republished], ...] = ()  # quarantine id published again
    open_episode: FloorBreached | None = None
    close_episode: FloorRestored | None = None

    @property
    def empty(self) -> bool:
        return not (self.withhold or self.republish or self.open_episode or self.close_episode)


def reconcile(publication: Publication, record: FloorRecord) -> FloorChanges:
    """The rows that bring the store's record in line with ``publication``."""
    withheld_now = {e.id: e for e in publication.withheld if e.id is not None}
    withhold = tuple(
        (i, _withheld_event(publication, withheld_now[i]))
        for i in sorted(set(withheld_now) - set(record.withheld))
    )
    republish = tuple(
        (
            i,
            Republished(
                model=publication.model,
                tag=tag,
                quarantine_id=i,
                why="the capacity floor is met without withholding it",
            ),
        )
        for i, tag in sorted(record.withheld.items())
        if i not in withheld_now
    )
    opening = publication.breached and not record.episode_open
    closing = record.episode_open and publication.usable is not None and not publication.breached
    return FloorChanges(
        withhold,
        republish,
        breach_event(publication) if opening else None,
        restore_event(publication) if closing else None,
    )


def restore_event(publication: Publication) -> FloorRestored:
    return FloorRestored(
        model=publication.model,
        usable=len(publication.usable or ()),
        floor=publication.floor,
        why=f"{len(publication.usable or ())} usable endpoint(s), the floor of "
        f"{publication.floor} is met again",
    )


def breach_event(publication: Publication) -> FloorBreached:
    """The row that opens a floor episode (one alert)."""
    usable_now = publication.usable or ()
    return FloorBreached(
        model=publication.model,
        usable=len(usable_now),
        floor=publication.floor,
        usable_endpoints=tuple(usable_now),
        listed=len(publication.listing or ()),
        why=(
            f"{len(usable_now)} usable endpoint(s) on the published list, below the capacity "
            f"floor of {publication.floor}"
        ),
    )


def _withheld_event(publication: Publication, entry: Exclusion) -> QuarantineWithheld:
    return QuarantineWithheld(
        model=publication.model,
        tag=entry.tag,
        withheld=entry.tag,
        quarantine_id=entry.id,
        since=entry.since,
        until=entry.until,
        floor=publication.floor,
        usable=len(publication.usable or ()),
        why=(
            f"quarantine of {entry.tag} withheld from the published list: without it "
            f"fewer than {publication.floor} endpoints would be usable"
        ),
        evidence=entry.evidence,
    )


# --- operators ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExclusionCheck:
    """An operator's exclusion weighed against the floor, on the list as it would be published."""

    allowed: bool
    message: str  # why it is refused, or what it does to the floor
    usable_before: int | None
    usable_after: int | None  # usable on the list published with it (withholding included)
    breaches: bool  # usable would fall below the floor (allowed only because forced)
    withholds: tuple[str, ...] = ()  # tags of published quarantines the floor would withhold


def with_exclusion(before: Publication, entry: Exclusion, now: datetime) -> Publication:
    """``before``'s model published again at ``now`` with ``entry`` in its runtime layer."""
    entries = (*before.entries, *before.withheld)
    return publish(
        before.model,
        before.listing,
        [e for e in entries if e.layer is Layer.builtin],
        [*(e for e in entries if e.layer is Layer.runtime), entry],
        [e for e in entries if e.layer is Layer.quarantine],
        floor=before.floor,
        now=now,
        controls=before.controls,
        needs=before.needs,
        requirements=[e for e in entries if e.layer is Layer.requirement],
    )


def _newly_withheld(before: Publication, after: Publication) -> tuple[str, ...]:
    def key(e: Exclusion) -> tuple[str, int | None, datetime | None]:
        return (e.tag, e.id, e.since)

    was = {key(e) for e in before.withheld}
    return tuple(sorted({e.tag for e in after.withheld if key(e) not in was}))


def check_exclusion(
    before: Publication, entry: Exclusion, *, force: bool, now: datetime
) -> ExclusionCheck:
    """May ``entry`` join the runtime layer of ``before``'s model?

    Weighed on :func:`publish` of the layers with the entry, so the withholding it would cause is
    counted. Refused unless ``force``: when usable falls (below the floor) even with every
    quarantine that would help withheld; when the floor is kept only by withholding a quarantine
    published now; and when the model was never listed (nothing is known of its capacity) and
    has a floor.
    """
    floor = before.floor
    if before.usable is None or before.listing is None:
        if floor <= 0:  # no floor to hold
            return ExclusionCheck(True, f"{before.model} has no capacity floor", None, None, False)
        return ExclusionCheck(
            force,
            f"{before.model} has not been listed yet, so its capacity is unknown: "
            "adding an exclusion needs --force",
            None,
            None,
            False,
        )
    after = with_exclusion(before, entry, now)
    now_usable, left = len(before.usable), len(after.usable or ())
    withholds = _newly_withheld(before, after)
    lowers = left < now_usable and left < floor
    held = f"the quarantine of {', '.join(withholds)}"
    if lowers:
        message = (
            f"excluding {entry.tag} leaves {left} usable endpoint(s) of {before.model} "
            f"(now {now_usable}), below its capacity floor of {floor}"
        )
        if withholds:
            message += f", even if it withholds {held}"
    elif withholds:
        message = (
            f"excluding {entry.tag} would withhold {held} from the published list: "
            f"{before.model} would keep its capacity floor of {floor} only that way "
            f"({left} usable endpoint(s), now {now_usable})"
        )
    else:
        message = f"{left} usable endpoint(s) of {before.model} remain (floor {floor})"
    return ExclusionCheck(
        allowed=force or not (lowers or withholds),
        message=message,
        usable_before=now_usable,
        usable_after=left,
        breaches=lowers,
        withholds=withholds,
    )


@dataclass(frozen=True)
class ExclusionAdmission:
    """What an admitted exclusion writes, in the transaction that inserts it."""

    event: ExclusionAdded
    floor: FloorChanges  # withheld quarantines, the episode a forced breach opens


def admit_exclusion(
    before: Publication,
    record: FloorRecord,
    entry: Exclusion,
    check: ExclusionCheck,
    *,
    force: bool,
    actor: str,
    policy_version: str | None,
    now: datetime,
) -> ExclusionAdmission:
    """The rows of ``entry`` (inserted, so it has its id) admitted on ``check``.

    The floor rows it causes describe the action (``action``: the exclusion's id, tag, force,
    actor) and carry the policy version; the episode it opens is the forced action's row. A
    breach that was there before the action (a built-in entry started, endpoints vanished, and
    no round has recorded it yet) is recorded as it is, not blamed on the action.
    """
    action = Action(str(EventKind.exclusion_added), entry.id, entry.tag, force, actor)
    after = with_exclusion(before, entry, now)
    changes = reconcile(after, record)
    if changes.open_episode is not None and not before.breached:
        usable_now = len(after.usable or ())
        opening = replace(
            breach_event(after),
            action=action,
            policy_version=policy_version,
            why=(
                f"{actor} {'forced' if force else 'added'} the exclusion of {entry.tag} "
                f"(id {entry.id}): {usable_now} usable endpoint(s) on the published list, below "
                f"the capacity floor of {after.floor}"
            ),
        )
        changes = replace(changes, open_episode=opening)
    changes = replace(
        changes,
        withhold=tuple((i, replace(e, action=action)) for i, e in changes.withhold),
    )
    event = ExclusionAdded(
        model=entry.model,
        tag=entry.tag,
        id=entry.id,
        reason=entry.reason,
        until=entry.until,
        force=force,
        usable_before=check.usable_before,
        usable_after=check.usable_after,
        withholds=check.withholds,
    )
    return ExclusionAdmission(event, changes)


def exclusion_removed(entry: Exclusion, *, reason: str) -> ExclusionRemoved:
    """The row of a runtime exclusion's removal (or a maintenance window's): always allowed, it
    only gives capacity back."""
    removed = MaintenanceRemoved if entry.layer is Layer.maintenance else ExclusionRemoved
    return removed(model=entry.model, tag=entry.tag, id=entry.id, reason=reason, was=entry.reason)
