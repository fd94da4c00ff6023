"""The reads behind `canary status`, the API and the published list, on SQLite and PostgreSQL:
every part of a publication's record, the marks agree with the full results, and values come
back typed (aware UTC times, tuples)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from canary.cli.common import missing_sqlite_file
from canary.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))

from ops_seed import builtin, seed  # noqa: E402


@pytest.fixture(scope="module")
def seeded(store: Store) -> tuple[list[str], datetime]:
    """Two seeded models; on the second, a forced exclusion breaches the floor (an open episode,
    a withheld quarantine), so every part of a publication's record is read."""
    now = datetime.now(UTC).replace(microsecond=0)
    models = ["acme/reads-1", "acme/reads-2"]
    for model in models:
        seed(store, model, now=now)
    store.add_exclusion(
        models[1], "alpha", "incident", "test", None, now - timedelta(minutes=5),
        builtin=builtin(models[1]), floor=5, force=True,
    )  # fmt: skip
    store.sync_floor(models[1], builtin(models[1]), 5, now, "test", None)
    return models, now


def test_the_reads_give_every_part_of_a_publication_typed(
    store: Store, seeded: tuple[list[str], datetime]
) -> None:
    models, now = seeded
    layers = store.model_layers(models, now)[models[1]]
    assert layers.record.episode_open, "the seed should breach the second model's floor"
    assert layers.record.withheld, "the seed should withhold a quarantine"
    assert layers.listing and {e.tag for e in layers.listing} >= {"alpha"}
    assert store.latency_figures_of(models)[models[0]]["alpha"]["7d"].n == 6
    full_rows = store.latest_results_of(models)
    marks = store.latest_marks_of(models)
    assert marks == {
        m: {
            tag: {c: (row.result, row.detail, row.round_id) for c, row in results.items()}
            for tag, results in full_rows[m].items()
        }
        for m in models
    }
    assert marks[models[0]], "the seed should judge the first model"
    quarantine = store.quarantines(None, True, now)[0]
    assert quarantine.started_at.tzinfo is UTC and isinstance(quarantine.causes, tuple)
    assert set(store.known_models()) >= set(models)
    assert store.known_tags_of(models)[models[0]] == sorted(full_rows[models[0]])
    closed = store.last_closed_rounds()
    assert closed[models[0]] == store.last_closed_rounds(models[0])[models[0]]
    assert closed[models[0]].finished_at is not None
    assert closed[models[0]].finished_at.tzinfo is UTC
    day = now - timedelta(hours=24)
    assert store.round_spend(day, models[1]).keys() <= {models[1]}
    recent = store.ttft_recent(models[0], day, 2)
    assert recent and all(0 < len(times) <= 2 for times in recent.values())


def test_an_unreachable_postgresql_is_an_error_of_the_store() -> None:
    unreachable = Store("postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    with pytest.raises(unreachable.errors):
        unreachable.known_models()
    unreachable.dispose()


def test_a_missing_sqlite_file_is_told(tmp_path: Path) -> None:
    present = tmp_path / "here.db"
    present.touch()
    assert missing_sqlite_file(f"sqlite:///{present}") is None
    assert missing_sqlite_file(f"sqlite:///{tmp_path / 'gone.db'}") == tmp_path / "gone.db"
    assert missing_sqlite_file(f"sqlite:///{tmp_path / 'a%20b.db'}") == tmp_path / "a b.db"
    assert missing_sqlite_file("sqlite://") is None
    assert missing_sqlite_file("postgresql://db/canary") is None
