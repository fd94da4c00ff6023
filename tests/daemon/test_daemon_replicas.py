"""Two `canary serve` replicas on one PostgreSQL database share each slot: every model's round is
claimed by exactly one of them, a replica killed mid-round loses its models to the other, and a
replica stopped mid-round hands its model to the other in the same slot; either way every model
has exactly one finished round in that slot, and the dead attempt leaves nothing that counts.

Real processes, a real simulator, a real database; a slot every 15 s and a 2 s claim TTL. To stop
a replica in the middle of a round for certain, one model is slowed down (each of its answers
takes :data:`SLOW_MS` to start) and the victim is a round of it that started after that, less
than a second ago: it cannot end before its first answer. The test polls the store with short
waits (bounded by deadlines): it is not a timed test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from builders import round_of
from polling import wait_for

from canary.service.ports import free_port
from canary.sim.server import RunningSimulator, start_simulator
from canary.store.repository import Store
from canary.store.rows import RoundRow

# Two daemons start (each loads the language models), then wait for slots of 15 s to come round:
# about half a minute each, twice that on a loaded 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(150)]

T = TypeVar("T")

MODELS = [f"acme/replicas-{i}" for i in range(6)]
TAGS = "abc"
KEY = "sim-replicas-key"
CANARY = Path(sys.executable).parent / "canary"
TTFT_MS = 100
# With these, a replica's round (126 requests and re-checks, each holding its place until its
# stream's end is read on the 150 ms grid) takes about a second, well under a slot, so both
# replicas run every slot.
CONCURRENCY = 32
# A slot every 15 s: longer than a round of the slowed model (two of its answers in a row, 10.5 s)
# and the other replica's watch of it. With 3 s slots such a round spanned several slots; a replica
# that ended a round just past a slot's start skipped that slot, ran the next alone, and the two
# kept to alternate slots from then on: no slot was shared to take a stopped round over in.
INTERVAL_MINUTES = 0.25
SLOW_MS = 5000  # the slowed model's answers: under the 10 s first-token limit, still passing
WAIT_S = 60  # what a step may take on a loaded machine (a step returns once it holds)
# A victim started less than this ago is certainly mid-round, far from its first answer (due
# SLOW_MS after its start); wide enough for a loaded machine's poll to catch one.
FRESH = timedelta(seconds=2.5)


def _provider(tag: str) -> dict[str, Any]:
    return {"tag": tag, "ttft_ms": TTFT_MS, "tokens_per_second": 3000}


SCENARIO = {
    "seed": 5,
    "models": [{"id": m, "providers": [_provider(t) for t in "abc"]} for m in MODELS],
}


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def holder_suffix(self) -> str:
        return f":{self.process.pid}"

    def alive(self) -> bool:
        if self.process.poll() is not None:
            return False
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


@pytest.fixture
def simulator() -> Iterator[RunningSimulator]:
    with start_simulator(SCENARIO) as sim:
        yield sim


def _start(url: str, sim: RunningSimulator, tmp_path: Path, name: str, **extra: str) -> Replica:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANARY_")}
    env.update(extra)
    env.update(
        CANARY_DATABASE_URL=url,
        CANARY_MODELS=",".join(MODELS),
        CANARY_CONCURRENCY=str(CONCURRENCY),
        CANARY_MODE="enforce",
        CANARY_LANGUAGES="en",
        CANARY_INTERVAL_MINUTES=str(INTERVAL_MINUTES),
        CANARY_LEASE_TTL_S="2",
        CANARY_LEASE_RENEW_S="0.5",
        CANARY_OPENROUTER_BASE_URL=sim.base_url,
        OPENROUTER_API_KEY=KEY,
        CANARY_LOG_FORMAT="json",
    )
    port = free_port()
    log = tmp_path / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(CANARY), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Replica(process, port, log)


def _stop(replica: Replica) -> None:
    if replica.process.poll() is None:
        replica.process.send_signal(signal.SIGKILL)
    replica.process.wait(timeout=10)


def _every_log_line_is_json(replica: Replica) -> None:
    """The replica's log (``CANARY_LOG_FORMAT=json``) holds JSON lines only: APScheduler's and
    uvicorn's records too. A line cut short by a SIGKILL (no newline yet) is not judged."""
    complete = replica.log.read_text().split("\n")[:-1]
    for line in complete:
        assert isinstance(json.loads(line), dict), line


def _judged_once_per_slot(rounds: list[RoundRow]) -> None:
    live = [(r.model, r.scheduled_at) for r in rounds if r.status != "abandoned"]
    assert len(live) == len(set(live)), "a model was judged twice in one slot"


def _rounds_of(store: Store) -> list[RoundRow]:
    return [r for m in MODELS for r in store.recent_rounds(m, limit=200)]


def _set_ttft(sim: RunningSimulator, model: str, ttft_ms: int) -> None:
    for tag in TAGS:
        sim.state.update(model, tag, {"ttft_ms": ttft_ms})


def _mid_round_victim(
    store: Store, model: str, slowed_at: datetime, holders: tuple[str, ...]
) -> RoundRow | None:
    """A round of the slowed ``model`` run by one of ``holders``, started after the slow-down
    and less than :data:`FRESH` ago (so it is certainly mid-round: it cannot end before its
    first answer, :data:`SLOW_MS` after its start), in a slot the other replica runs too (so
    that one watches it and takes it over in the same slot)."""
    now = datetime.now(UTC)
    rounds = _rounds_of(store)
    for r in rounds:
        if (
            r.model == model
            and r.status == "running"
            and r.runner_id.endswith(holders)
            and slowed_at <= r.started_at
            and now - r.started_at < FRESH
        ):
            others = {o.runner_id for o in rounds if o.scheduled_at == r.scheduled_at}
            if any(h.endswith(holders) for h in others - {r.runner_id}):
                return r
    return None


def _wait_logging_rounds(store: Store, what: str, check: Callable[[], T | None]) -> T:
    """:func:`wait_for`, and on a timeout the latest rounds (slot, model, runner, status,
    start): they show whether the replicas ran the same slots or alternate ones."""
    try:
        return wait_for(what, check, WAIT_S)
    except AssertionError as exc:
        ran = sorted(
            (str(r.scheduled_at), r.model, r.runner_id, r.status, str(r.started_at))
            for r in _rounds_of(store)
        )
        raise AssertionError(
            f"{exc}; rounds (slot, model, runner, status, start): {ran[-36:]}"
        ) from None


def _wait_for_a_shared_slot(store: Store, replicas: list[Replica]) -> None:
    """Until both ``replicas`` finished rounds in one slot: they are in step, past their
    start-up (the first round loads the language models), before a model is slowed down."""
    mine = tuple(p.holder_suffix for p in replicas)  # the module's database is shared

    def shared_slot() -> bool:
        by_slot: dict[datetime, set[str]] = {}
        for r in _rounds_of(store):
            if r.status == "finished" and r.runner_id.endswith(mine):
                by_slot.setdefault(r.scheduled_at, set()).add(r.runner_id)
        return any(len(holders) == 2 for holders in by_slot.values())

    _wait_logging_rounds(store, "a slot run by both replicas at once", shared_slot)


def _every_model_finished_once(store: Store, slot: datetime) -> list[RoundRow] | None:
    """Each model's rounds in ``slot`` once every one of them has a finished round there."""
    rounds = [r for r in _rounds_of(store) if r.scheduled_at == slot]
    done = {r.model for r in rounds if r.status == "finished"}
    return rounds if done == set(MODELS) else None


def _exactly_one_finished_round_each(rounds: list[RoundRow]) -> None:
    for model in MODELS:
        ended = [r.status for r in rounds if r.model == model and r.status != "abandoned"]
        assert ended == ["finished"], f"{model}: {ended} in the slot"


def _histograms_count_finished_rounds_only(store: Store) -> None:
    """The latency histograms hold each finished round's attributed probes, and nothing of
    the abandoned attempts (nor of rounds that never finished)."""
    week_ago = datetime.now(UTC) - timedelta(days=7)
    histograms = store.ttft_histograms_of(MODELS, week_ago, week_ago)
    for model in MODELS:
        _, week = histograms[model]
        counted = sum(n for buckets in week.values() for n, _ in buckets.values())
        finished = [r for r in store.recent_rounds(model, limit=500) if r.status == "finished"]
        probes = [
            p
            for r in finished
            for p in store.probes(r.id)
            if p.ttft_s is not None and p.attribution_ok
        ]
        assert counted == len(probes), f"{model}: {counted} counted, {len(probes)} finished"


def test_two_replicas_share_each_slot_and_a_killed_ones_models_are_claimed_again(
    postgres_url: str, simulator: RunningSimulator, tmp_path: Path
) -> None:
    store = Store(postgres_url)

    def _rounds() -> list[RoundRow]:
        return _rounds_of(store)

    store.upgrade()
    replicas = [_start(postgres_url, simulator, tmp_path, name) for name in ("one", "two")]
    try:
        wait_for("both replicas to serve", lambda: all(r.alive() for r in replicas), WAIT_S)

        _wait_for_a_shared_slot(store, replicas)
        assert all(r.alive() for r in replicas), "a replica died"
        _judged_once_per_slot(_rounds())
        assert all(
            r.runner_id.endswith(tuple(p.holder_suffix for p in replicas)) for r in _rounds()
        )

        # Kill a replica in the middle of a model's round, without any chance to clean up.
        slow, slowed_at = MODELS[0], datetime.now(UTC)
        _set_ttft(simulator, slow, SLOW_MS)
        mine = tuple(p.holder_suffix for p in replicas)
        victim = _wait_logging_rounds(
            store,
            "a fresh round of the slowed model",
            lambda: _mid_round_victim(store, slow, slowed_at, mine),
        )
        (killed,) = [p for p in replicas if victim.runner_id.endswith(p.holder_suffix)]
        killed.process.send_signal(signal.SIGKILL)
        killed.process.wait(timeout=10)
        (survivor,) = [p for p in replicas if p is not killed]
        assert round_of(store, victim.id).status == "running"  # it died mid-round
        _set_ttft(simulator, slow, TTFT_MS)

        def claimed_again() -> RoundRow | None:
            live = store.live_rounds([victim.model], victim.scheduled_at).get(victim.model)
            return live if live is not None and live.status == "finished" else None

        again = wait_for("the survivor to finish the killed replica's model", claimed_again, WAIT_S)
        dead = round_of(store, victim.id)
        assert dead.status == "abandoned" and dead.detail == {"why": "claimer lost"}
        assert again.runner_id.endswith(survivor.holder_suffix) and again.id != victim.id
        assert store.probes(victim.id) == []  # killed while its first answers were due
        in_slot = wait_for(
            "every model of the slot finished",
            lambda: _every_model_finished_once(store, victim.scheduled_at),
            WAIT_S,
        )
        _exactly_one_finished_round_each(in_slot)
        assert survivor.alive()
        _judged_once_per_slot(_rounds())
        hanging = [
            r for r in _rounds() if r.status == "running" and r.runner_id == victim.runner_id
        ]
        assert hanging == []  # the dead replica left nothing running
        _stop(survivor)  # the store stands still: nothing finishes while it is read
        _histograms_count_finished_rounds_only(store)
    finally:
        for replica in replicas:
            _stop(replica)
        store.dispose()


def test_a_replica_stopped_mid_round_hands_its_model_to_the_other_in_the_same_slot(
    postgres_url: str, simulator: RunningSimulator, tmp_path: Path
) -> None:
    store = Store(postgres_url)
    store.upgrade()
    # no grace: a SIGTERM cancels the running round at once, which is then recorded abandoned
    replicas = [
        _start(postgres_url, simulator, tmp_path, name, CANARY_SHUTDOWN_GRACE_S="0")
        for name in ("one", "two")
    ]
    try:
        wait_for("both replicas to serve", lambda: all(r.alive() for r in replicas), WAIT_S)
        _wait_for_a_shared_slot(store, replicas)

        mine = tuple(p.holder_suffix for p in replicas)  # the module's database is shared
        slow, slowed_at = MODELS[1], datetime.now(UTC)
        _set_ttft(simulator, slow, SLOW_MS)
        victim = _wait_logging_rounds(
            store,
            "a fresh round of the slowed model",
            lambda: _mid_round_victim(store, slow, slowed_at, mine),
        )
        (stopped,) = [p for p in replicas if victim.runner_id.endswith(p.holder_suffix)]
        (survivor,) = [p for p in replicas if p is not stopped]
        stopped.process.send_signal(signal.SIGTERM)
        assert stopped.process.wait(timeout=30) == 0
        _set_ttft(simulator, slow, TTFT_MS)
        given_up = round_of(store, victim.id)
        assert given_up.status == "abandoned" and given_up.detail.get("why") == "shutdown"

        def finished_here() -> RoundRow | None:
            live = store.live_rounds([victim.model], victim.scheduled_at).get(victim.model)
            return live if live is not None and live.status == "finished" else None

        again = wait_for("the survivor to run the model in the same slot", finished_here, WAIT_S)
        assert again.runner_id.endswith(survivor.holder_suffix)
        assert again.scheduled_at == victim.scheduled_at and again.id != victim.id
        assert store.probes(victim.id) == []
        in_slot = wait_for(
            "every model of the slot finished",
            lambda: _every_model_finished_once(store, victim.scheduled_at),
            WAIT_S,
        )
        _exactly_one_finished_round_each(in_slot)
        assert survivor.alive()
        _judged_once_per_slot(_rounds_of(store))
        _stop(survivor)
        _histograms_count_finished_rounds_only(store)
        for replica in replicas:
            _every_log_line_is_json(replica)
    finally:
        for replica in replicas:
            _stop(replica)
        store.dispose()
