"""The safety invariants of the published list, as a stateful property (issue 12).

Hypothesis drives the real core and a real SQLite store (in memory, migrated once per session,
emptied per example) through random sequences: rounds with random per-contract results (transport errors and
weak probes included), endpoints appearing and vanishing, base-slug and dated built-in entries,
operator exclusions with and without force, maintenance windows, manual releases, housekeeping
and clock jumps of up to 20 days. After every step it checks, against oracles written here rather than the code under
test:

- no quarantine starts that would at once have to be withheld (with it counted, usable stays at
  or over the floor), no quarantine that would give capacity back is published while usable <
  floor, and every withheld quarantine was needed (publishing it again would drop usable below
  the floor);
- no unforced operator action lowered usable below the floor or kept it only by withholding a
  published quarantine, none was admitted before the model's first listing, and a forced one
  that breached it opened the episode with a row describing it;
- ``floor_breached`` is in the document exactly when usable < floor, with one audit row per
  episode and an episode open exactly while the floor is breached (once recorded);
- no quarantine without the evidence rule: each cause failed this round and in the previous
  conclusive round of that contract, within the max age, since the endpoint's last release (a
  round inside the endpoint's maintenance window is no evidence: none starts or ends by it);
- ``until`` never moves earlier except by a release;
- one audit row per quarantine start and end, exclusion add and remove, and one ``floor_held``
  row per withholding of a quarantine (one ``republished`` row per publishing again);
- the list is the merge of the published layers.

What the invariants read is read once per step (:class:`StoreView`): every invariant checks the
same state: 500 examples, in four tests of 125 (each prints its time) that parallel workers share.
"""

from __future__ import annotations

import contextlib
import time
import unittest
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)
from sqlalchemy import delete, func, select

from canary.core.document import ignore_document
from canary.core.floor import Publication
from canary.core.identity import Listed, named_tags
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EventKind,
    Exclusion,
    Layer,
    Look,
    Mode,
    Pricing,
    Result,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import QuarantineStart
from canary.core.verdict import judge_round
from canary.rounds.deciding import ModelDecisions
from canary.store import FloorRefused, NoActiveQuarantine, QuarantineRow, Store
from canary.store import tables as t
from canary.store._decode import quarantine_row
from canary.store._layers import FloorEpisodeRow, floor_episode_row
from canary.store.rows import WindowInForce

MODEL = "acme/safety-1"
T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
INTERVAL = timedelta(minutes=30)
TAGS = ("deepinfra/fp8", "deepinfra/turbo", "alpha", "beta", "gamma", "delta")
TIERED = {"deepinfra/turbo": "flex"}  # a service-tier endpoint: a base slug does not name it
ENTRY_TAGS = ("deepinfra", "deepinfra/fp8", "deepinfra/turbo", "alpha", "beta", "gamma")
CONTRACTS = (Contract.ttft, Contract.schema, Contract.language, Contract.refusal)
RESULTS = (
    Result.passed,
    Result.passed,
    Result.fail,
    Result.fail,
    Result.inconclusive,
    Result.transport_error,
    Result.not_applicable,
)
RULES = PolicyRules(mode=Mode.enforce)
MAX_AGE = RULES.streak_max_age
POLICY = "p-safety"
WITHHOLDING_ROWS = (str(EventKind.floor_held), str(EventKind.republished))
EXAMPLES = 500


@pytest.fixture(scope="session")
def safety_store() -> Iterator[Store]:
    """An in-memory SQLite database, migrated once: SQLAlchemy keeps one connection per thread
    for ``sqlite://`` (its SingletonThreadPool), so every step of every example uses it."""
    store = Store("sqlite://")
    store.upgrade()
    yield store
    store.dispose()


def names(entry: str, tag: str) -> bool:
    """The identity rule, restated: the full tag, or the base slug of a tier-less endpoint."""
    return entry == tag or ("/" not in entry and tag.split("/")[0] == entry and tag not in TIERED)


def active_at(entry: Exclusion, now: datetime) -> bool:
    return (entry.since is None or entry.since <= now) and (
        entry.until is None or now < entry.until
    )


class Named(Protocol):
    @property
    def tag(self) -> str: ...


def usable_of(listed: Iterable[str], entries: Sequence[Named]) -> set[str]:
    """The listed endpoints no entry names (``entries``: the ones that count)."""
    return {tag for tag in listed if not any(names(e.tag, tag) for e in entries)}


@dataclass
class Oracle:
    """What the test remembers on its own."""

    conclusive: dict[tuple[str, Contract], list[tuple[datetime, Result]]] = field(
        default_factory=dict
    )
    released_at: dict[str, datetime] = field(default_factory=dict)
    until: dict[str, datetime] = field(default_factory=dict)
    episodes_seen: int = 0


@dataclass(frozen=True)
class StoreView:
    """What the store holds at one moment, read once for every invariant of a step."""

    publication: Publication
    listing: tuple[Listed, ...] | None
    runtime: tuple[Exclusion, ...]  # active runtime exclusions
    open_quarantines: tuple[QuarantineRow, ...]  # not released (their end may have come)
    episodes: tuple[FloorEpisodeRow, ...]
    audit: Counter[str]  # audit rows per event
    quarantine_rows: int
    ended: int  # quarantine rows ended by a release (not superseded)
    exclusion_rows: int
    removed: int
    withheld_mark: dict[int, bool]  # every quarantine row: is it recorded withheld?
    withholdings: Counter[tuple[str, int]]  # (floor_held | republished, quarantine id) -> rows


# Built once: a view is read after every step that changed the store.
_A, _Q, _X = t.audit.c, t.quarantines.c, t.exclusions.c
_ABOUT = _A.detail["quarantine_id"].as_integer()
AUDIT_ROWS = select(_A.event, func.count()).where(_A.model == MODEL).group_by(_A.event)
WITHHOLDINGS = (
    select(_A.event, _ABOUT, func.count())
    .where(_A.model == MODEL, _A.event.in_(WITHHOLDING_ROWS), _ABOUT.is_not(None))
    .group_by(_A.event, _ABOUT)
)
QUARANTINES = (
    select(t.quarantines).where(_Q.model == MODEL).order_by(_Q.started_at.desc(), _Q.id.desc())
)
EXCLUSIONS = select(_X.id, _X.tag, _X.until, _X.removed_at).where(_X.model == MODEL).order_by(_X.id)
EPISODES = (
    select(t.floor_episodes)
    .where(t.floor_episodes.c.model == MODEL)
    .order_by(t.floor_episodes.c.opened_at, t.floor_episodes.c.id)
)


def read_view(machine: SafetyMachine, at: datetime) -> StoreView:
    """Every row the invariants count, on one connection; the runtime layer is worked out here
    from the exclusion rows (not asked of the store)."""
    publication = machine.publication(at)
    with machine.store.engine.connect() as conn:
        audit = Counter({event: n for event, n in conn.execute(AUDIT_ROWS)})
        quarantines = [quarantine_row(r) for r in conn.execute(QUARANTINES).mappings()]
        exclusions = conn.execute(EXCLUSIONS).all()
        episodes = tuple(floor_episode_row(r) for r in conn.execute(EPISODES).mappings())
        withholdings: Counter[tuple[str, int]] = Counter()
        if quarantines:
            for event, quarantine_id, n in conn.execute(WITHHOLDINGS):
                withholdings[(event, quarantine_id)] = n
    runtime = tuple(
        Exclusion(MODEL, x.tag, Layer.runtime, "", until=x.until, id=x.id)
        for x in exclusions
        if x.removed_at is None and (x.until is None or x.until > at)
    )
    return StoreView(
        publication=publication,
        listing=publication.listing,  # the store's latest listing, as the publication read it
        runtime=runtime,
        open_quarantines=tuple(q for q in quarantines if q.released_at is None),
        episodes=episodes,
        audit=audit,
        quarantine_rows=len(quarantines),
        ended=sum(1 for q in quarantines if q.released_at and q.release_why != "superseded"),
        exclusion_rows=len(exclusions),
        removed=sum(1 for x in exclusions if x.removed_at is not None),
        withheld_mark={q.id: q.withheld_at is not None for q in quarantines},
        withholdings=withholdings,
    )


class SafetyMachine(RuleBasedStateMachine):
    store: Store

    @initialize(floor=st.integers(1, 3))
    def start(self, floor: int) -> None:
        self.floor = floor
        self.now = T0
        self.listed: set[str] = {"alpha", "beta", "gamma", "deepinfra/fp8"}
        self.builtin: list[Exclusion] = []
        self.oracle = Oracle()
        self.rounds = 0
        self.synced_at: datetime | None = T0  # when the floor record was last brought up to date
        self._views: dict[datetime, StoreView] = {}
        self._publications: dict[datetime, Publication] = {}
        with self.store.engine.begin() as conn:
            for table in reversed(t.metadata.sorted_tables):
                conn.execute(delete(table))

    # --- the shell under test -------------------------------------------------------------

    @property
    def decisions(self) -> ModelDecisions:
        return ModelDecisions(self.store, tuple(self.builtin), RULES, POLICY)

    def view(self, at: datetime | None = None) -> StoreView:
        """The store as it stands, at ``at`` (default now); read again only after a change."""
        at = at or self.now
        if at not in self._views:
            self._views[at] = read_view(self, at)
        return self._views[at]

    def changed(self) -> None:
        """The store or the built-in layer changed: the next view reads again."""
        self._views.clear()
        self._publications.clear()

    def publication(self, at: datetime | None = None) -> Publication:
        at = at or self.now
        if at not in self._publications:
            self._publications[at] = self.decisions.publication(MODEL, self.floor, at)
        return self._publications[at]

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(MODEL, tag, tag, Pricing(0.0, 0.0), service_tier=TIERED.get(tag))
            for tag in sorted(self.listed)
        ]

    # --- rules ----------------------------------------------------------------------------

    @rule(
        data=st.data(),
        weak=st.booleans(),
        skip=st.sets(st.sampled_from(TAGS), max_size=2),
    )
    def round(self, data: st.DataObject, weak: bool, skip: set[str]) -> None:
        self.run_round(data, weak, skip)

    @rule(data=st.data(), tag=st.sampled_from(TAGS), contract=st.sampled_from(CONTRACTS))
    def a_defect_reproduces(self, data: st.DataObject, tag: str, contract: Contract) -> None:
        """Two rounds in which one endpoint fails one contract (the others drawn at random)."""
        for _ in range(2):
            self.run_round(data, False, set(), forced=(tag, contract))

    def run_round(
        self,
        data: st.DataObject,
        weak: bool,
        skip: set[str],
        forced: tuple[str, Contract] | None = None,
    ) -> None:
        self.rounds += 1
        round_id = self.store.claim_round(MODEL, self.now, "machine", POLICY, {})
        assert round_id is not None
        self.store.record_snapshots(round_id, MODEL, self.endpoints(), self.now)
        self.changed()
        before = self.publication()  # as published on this round's listing, as the runner does
        probed = sorted(self.listed - skip)
        results: dict[str, list[ContractResult]] = {}
        for tag in probed:
            chosen = data.draw(st.tuples(*(st.sampled_from(RESULTS) for _ in CONTRACTS)))
            results[tag] = [
                ContractResult(c, Result.fail if forced == (tag, c) else r, f"{c.value} {r.value}")
                for c, r in zip(CONTRACTS, chosen, strict=True)
            ]
        windows = self.store.active_exclusions(MODEL, self.now, Layer.maintenance)
        frozen = named_tags(windows, [Listed.of(e) for e in self.endpoints()], self.now)
        outcome = judge_round(
            MODEL,
            results,
            positive_controls=("alpha",) if weak else (),
            rules=RULES,
            look=Look.round(round_id, self.now),
            listed=sorted(self.listed),
            usable=before.usable,
            maintenance=frozen,
        )
        in_force = {t: u for t, u in self.oracle.until.items() if u > self.now}  # before this round
        decision = self.decisions.decide_round(
            MODEL,
            round_id=round_id,
            listing=[Listed.of(e) for e in self.endpoints()],
            verdicts=outcome.verdicts,
            skipped=sorted(self.listed & skip),
            round_events=list(outcome.events),
            floor=self.floor,
            now=self.now,
        )
        for end in decision.releases:
            assert end.tag not in frozen or end.why == "expired", "released by in-window results"
            self.oracle.released_at[end.tag] = self.now
            self.oracle.until.pop(end.tag, None)
        for start in decision.quarantines:
            event("a quarantine started")
            self.check_evidence(start.tag, start.causes, outcome.verdicts[start.tag].results)
            assert start.tag not in in_force, f"{start.tag} quarantined again while quarantined"
            assert start.tag not in frozen, f"{start.tag} quarantined in its maintenance window"
        if decision.quarantines:
            self.check_started_above_the_floor(decision.quarantines)
        for tag, verdict in outcome.verdicts.items():
            for r in verdict.results if tag not in frozen else ():  # no evidence in a window
                if r.result in (Result.passed, Result.fail):
                    self.oracle.conclusive.setdefault((tag, r.contract), []).append(
                        (self.now, r.result)
                    )
        self.decisions.sync_floor([MODEL], {MODEL: self.floor}, self.now)
        self.synced_at = self.now
        self.now += INTERVAL
        self.changed()

    def check_evidence(
        self, tag: str, causes: tuple[str, ...], results: tuple[ContractResult, ...]
    ) -> None:
        assert causes, f"{tag} quarantined without a cause"
        released = self.oracle.released_at.get(tag)
        for cause in causes:
            contract = Contract(cause)
            now_result = next(r.result for r in results if r.contract is contract)
            assert now_result is Result.fail, f"{tag}: cause {cause} did not fail this round"
            history = [
                (at, result)
                for at, result in self.oracle.conclusive.get((tag, contract), [])
                if released is None or at >= released
            ]
            assert history, f"{tag}: {cause} failed only once"
            at, result = history[-1]
            assert result is Result.fail and self.now - at <= MAX_AGE, (
                f"{tag}: {cause} had no failing round in a row before ({history[-3:]})"
            )

    def check_started_above_the_floor(self, starts: Sequence[QuarantineStart]) -> None:
        """No quarantine starts where it would at once have to be withheld: with it and every
        quarantine in force counted (none withheld), usable stays at or over the floor. One of an
        endpoint a human entry already names takes no capacity, so the floor does not stop it."""
        human = [
            *(e for e in self.builtin if active_at(e, self.now)),
            *self.store.active_exclusions(MODEL, self.now),
        ]
        in_force = [q for q in self.store.quarantines(MODEL) if q.until > self.now]
        usable = usable_of(self.listed, [*human, *in_force])
        for start in starts:
            if any(names(h.tag, start.tag) for h in human):
                continue
            assert len(usable) >= self.floor, (
                f"{start.tag} quarantined below the floor: {len(usable)} usable with it counted, "
                f"floor {self.floor}"
            )

    @rule(tag=st.sampled_from(TAGS))
    def endpoint_appears_or_vanishes(self, tag: str) -> None:
        self.listed ^= {tag}  # seen by the next round's listing

    @rule(
        tag=st.sampled_from(ENTRY_TAGS),
        starts=st.sampled_from([None, -30, 2, 48]),
        lasts=st.sampled_from([None, 1, 24, 24 * 40]),
    )
    def builtin_entry(self, tag: str, starts: int | None, lasts: int | None) -> None:
        since = None if starts is None else self.now + timedelta(hours=starts)
        until = None if lasts is None else (since or self.now) + timedelta(hours=lasts)
        self.builtin.append(Exclusion(MODEL, tag, Layer.builtin, "reviewed", since, until))
        self.synced_at = None
        self.changed()

    @rule(tag=st.sampled_from(ENTRY_TAGS), force=st.booleans())
    def operator_excludes(self, tag: str, force: bool) -> None:
        self.exclude(tag, force)

    @rule(data=st.data())
    def operator_forces_out_a_usable_endpoint(self, data: st.DataObject) -> None:
        """The way floor episodes are opened by hand: a usable endpoint excluded with force."""
        usable = self.view().publication.usable
        if usable:
            self.exclude(data.draw(st.sampled_from(usable)), force=True)

    def exclude(self, tag: str, force: bool) -> None:
        before = self.publication()
        episode_open = any(e.open for e in self.view().episodes)
        try:
            added = self.store.add_exclusion(
                MODEL, tag, "ops", "cli:ops", None, self.now,
                builtin=tuple(self.builtin), floor=self.floor, force=force,
                policy_version=POLICY,
            )  # fmt: skip
        except FloorRefused:
            event("an exclusion was refused by the floor")
            if self.rounds == 0:
                event("an exclusion before the first listing was refused")
            assert not force
            return
        assert force or self.rounds > 0, f"{tag} excluded unforced before the first listing"
        self.changed()
        self.synced_at = self.now  # an add records the floor of its publication, in its transaction
        after = self.publication()
        if not force and before.usable is not None:
            assert after.usable is not None
            assert len(after.usable) >= min(self.floor, len(before.usable)), (
                f"an unforced exclusion of {tag} left {len(after.usable)} usable"
            )
            newly = {e.id for e in after.withheld} - {e.id for e in before.withheld}
            assert not newly, f"an unforced exclusion of {tag} withheld quarantine(s) {newly}"
        if after.breached and not episode_open and before.breached:
            event("an exclusion recorded a breach that was there before it")
            opened = self.view().episodes[-1]
            assert opened.open and "action" not in opened.detail
        elif after.breached and not episode_open:
            event("a forced exclusion opened a floor episode")
            assert force
            opened = self.view().episodes[-1]
            assert opened.open and opened.opened_by == "cli:ops"
            assert opened.detail["action"] == {
                "event": "exclusion_added", "exclusion_id": added.id, "tag": tag, "force": True,
                "actor": "cli:ops",
            }  # fmt: skip
            assert opened.policy_version == POLICY

    @rule(data=st.data())
    def operator_removes(self, data: st.DataObject) -> None:
        active = self.view().runtime
        if active:
            chosen = data.draw(st.sampled_from(active))
            assert chosen.id is not None
            self.store.remove_exclusion(chosen.id, "cli:ops", "done", self.now)
            self.synced_at = None
            self.changed()

    @rule(tag=st.sampled_from(ENTRY_TAGS), hours=st.sampled_from([1, 2, 30]))
    def operator_opens_a_maintenance_window(self, tag: str, hours: int) -> None:
        until = self.now + timedelta(hours=hours)
        with contextlib.suppress(WindowInForce):
            self.store.add_maintenance(MODEL, tag, "planned", "cli:ops", until, self.now)
        self.changed()

    @rule(tag=st.sampled_from(TAGS))
    def operator_releases(self, tag: str) -> None:
        try:
            self.store.release_quarantine(MODEL, tag, "cli:ops", "checked", self.now)
        except NoActiveQuarantine:
            return
        self.oracle.released_at[tag] = self.now
        self.oracle.until.pop(tag, None)
        self.synced_at = None
        self.changed()

    @rule()
    def housekeeping(self) -> None:
        for released in self.decisions.expire_due(MODEL, self.now):
            if released.tag is not None:
                self.oracle.released_at[released.tag] = self.now
                self.oracle.until.pop(released.tag, None)
        self.decisions.sync_floor([MODEL], {MODEL: self.floor}, self.now)
        self.synced_at = self.now
        self.changed()

    @rule(hours=st.sampled_from([1, 6, 7, 23, 24 * 3, 24 * 8, 24 * 20]))
    def clock_jumps(self, hours: int) -> None:
        self.now += timedelta(hours=hours)  # the views are keyed by time: nothing to read again

    # --- invariants ---------------------------------------------------------------------------

    @invariant()
    def the_floor_holds_on_the_published_list(self) -> None:
        view = self.view()
        p = view.publication
        document = ignore_document(p, generated_at=self.now, stale=False, policy_version="p")
        listing = view.listing
        if listing is None:
            assert document["floor_breached"] is False and document["usable_endpoints"] is None
            return
        listed = {e.tag for e in listing}
        published = list(p.entries)
        usable = usable_of(listed, published)
        assert document["usable_endpoints"] == len(usable)
        assert document["floor_breached"] is (len(usable) < self.floor)
        for entry in p.withheld:
            again = usable_of(listed, [*published, entry])
            assert len(again) < self.floor, (
                f"{entry.tag} withheld, though {len(again)} would be usable with it published "
                f"(floor {self.floor})"
            )
        if p.withheld:
            event("a quarantine was withheld")
        if p.breached:
            event("the floor was breached")
        humans = [e for e in published if e.layer is not Layer.quarantine]
        if len(usable) < self.floor:
            for entry in published:
                if entry.layer is Layer.quarantine:
                    helps = entry.tag in listed and not any(names(h.tag, entry.tag) for h in humans)
                    assert not helps, f"{entry.tag} stays quarantined while the floor is breached"

    @invariant()
    def one_audit_row_per_episode_and_an_episode_open_exactly_while_breached(self) -> None:
        view = self.view()
        episodes = view.episodes
        assert view.audit[EventKind.floor_breached] == len(episodes)
        assert sum(1 for e in episodes if e.open) <= 1
        if self.synced_at is not None and view.listing is not None:
            open_now = any(e.open for e in episodes)
            assert open_now is self.publication(self.synced_at).breached

    @invariant()
    def one_floor_held_row_per_withholding(self) -> None:
        view = self.view()
        held, back = WITHHOLDING_ROWS
        for quarantine_id, withheld in view.withheld_mark.items():
            rows = (
                view.withholdings[(held, quarantine_id)],
                view.withholdings[(back, quarantine_id)],
            )
            assert rows[0] == rows[1] + withheld, (
                f"quarantine {quarantine_id}: {rows[0]} floor_held and {rows[1]} republished rows, "
                f"{'' if withheld else 'not '}withheld now"
            )
        if self.synced_at is not None and view.listing is not None:
            marked = {
                q.id
                for q in view.open_quarantines
                if view.withheld_mark[q.id] and q.until > self.synced_at
            }
            assert marked == {e.id for e in self.publication(self.synced_at).withheld}

    @invariant()
    def until_never_moves_earlier_except_by_a_release(self) -> None:
        for q in self.view().open_quarantines:
            recorded = self.oracle.until.get(q.tag)
            assert recorded is None or q.until >= recorded
            self.oracle.until[q.tag] = q.until

    @invariant()
    def one_audit_row_per_start_end_add_and_remove(self) -> None:
        view = self.view()
        assert view.audit[EventKind.quarantine] == view.quarantine_rows
        assert view.audit[EventKind.release] == view.ended
        assert view.audit[EventKind.exclusion_added] == view.exclusion_rows
        assert view.audit[EventKind.exclusion_removed] == view.removed

    @invariant()
    def the_list_is_the_merge_of_the_published_layers(self) -> None:
        view = self.view()
        p = view.publication
        in_force = [q for q in view.open_quarantines if q.until > self.now]
        withheld = {e.id for e in p.withheld}
        expected = (
            {(e.tag, Layer.builtin) for e in self.builtin if e.active(self.now)}
            | {(e.tag, Layer.runtime) for e in view.runtime}
            | {(q.tag, Layer.quarantine) for q in in_force if q.id not in withheld}
        )
        assert {(e.tag, e.layer) for e in p.entries} == expected
        assert p.ignore == sorted({tag for tag, _ in expected})
        assert withheld <= {q.id for q in in_force}


# The examples run as a few tests, each its own random draw, which parallel workers share: one
# test of them all would hold a worker for 20 s (a minute on a loaded machine) at the run's end.
PARTS = 4


def _part(number: int) -> type[unittest.TestCase]:
    part: type[unittest.TestCase] = type(f"TestSafety{number}", (SafetyMachine.TestCase,), {})
    part.settings = settings(  # type: ignore[attr-defined]
        max_examples=EXAMPLES // PARTS,
        stateful_step_count=14,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    # CPU-bound: about 5 s alone, several times that on a loaded machine (cut mid-statement, the
    # in-memory database would be lost and the failure would read as a flaky strategy)
    part.pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]  # type: ignore[attr-defined]
    return part


TestSafety1, TestSafety2, TestSafety3, TestSafety4 = (_part(n) for n in range(1, PARTS + 1))


@pytest.fixture(autouse=True)
def _machine_store(safety_store: Store) -> Iterator[None]:
    SafetyMachine.store = safety_store
    started = time.perf_counter()
    yield
    took = time.perf_counter() - started
    print(f"\nsafety machine: {EXAMPLES // PARTS} examples in {took:.1f} s")
