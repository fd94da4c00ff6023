"""The light read path answers exactly as the store does, on SQLite and PostgreSQL.

`canary status` reads through LightStore (a driver connection, no SQLAlchemy); the API and the
daemon read through Store. Both run the same plain SQL (canary.store.plain_reads), so what is
checked here is the part that differs: the transports, the binding of times and the conversion
of values that SQLAlchemy's column types do for the store.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, Boolean

from canary.cli.common import missing_sqlite_file
from canary.store import Store
from canary.store import tables as t
from canary.store.light import LightStore, supports
from canary.store.plain import KINDS, Reader, _to_pyformat, sqlite_time, utc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))

from ops_seed import builtin, seed  # noqa: E402


@pytest.fixture(scope="module")
def seeded(store: Store) -> tuple[list[str], datetime]:
    """Two seeded models; on the second, a forced exclusion breaches the floor (an open episode,
    a withheld quarantine), so every part of a publication's record is read."""
    now = datetime.now(UTC).replace(microsecond=0)
    models = ["acme/light-1", "acme/light-2"]
    for model in models:
        seed(store, model, now=now)
    store.add_exclusion(
        models[1], "alpha", "incident", "test", None, now - timedelta(minutes=5),
        builtin=builtin(models[1]), floor=5, force=True,
    )  # fmt: skip
    store.sync_floor(models[1], builtin(models[1]), 5, now, "test", None)
    return models, now


@pytest.fixture(scope="module")
def light(store: Store) -> Iterator[LightStore]:
    reader = LightStore(store.url)
    yield reader
    reader.dispose()


def _reads(s: Any, models: list[str], now: datetime) -> dict[str, Any]:
    day = now - timedelta(hours=24)
    return {
        "known_models": s.known_models(),
        "known_tags_of": s.known_tags_of(models),
        "recent_rounds": s.recent_rounds(None, 3),
        "recent_rounds_of": s.recent_rounds(models[0], 5),
        "model_layers": s.model_layers(models, now),
        "round_spend": s.round_spend(day),
        "round_spend_of": s.round_spend(day, models[1]),
        "last_closed_rounds": s.last_closed_rounds(),
        "load_states_of": s.load_states_of(models),
        "latest_marks_of": s.latest_marks_of(models),
        "quarantines": s.quarantines(None, True, now),
        "all_quarantines": s.quarantines(models[1], False, None),
        "active_exclusions": s.active_exclusions(None, now),
        "latest_listings": s.latest_listings(models),
        "latest_snapshots": s.latest_snapshots(models),
        "latency_figures_of": s.latency_figures_of(models),
        "ttft_recent": s.ttft_recent(models[0], day, 2),
    }


def test_the_light_store_reads_what_the_store_reads(
    store: Store, light: LightStore, seeded: tuple[list[str], datetime]
) -> None:
    models, now = seeded
    full, plain = _reads(store, models, now), _reads(light, models, now)
    for name, expected in full.items():
        assert plain[name] == expected, name
    layers = plain["model_layers"][models[1]]
    assert layers.record.episode_open, "the seed should breach the second model's floor"
    assert layers.record.withheld, "the seed should withhold a quarantine"
    assert plain["latency_figures_of"][models[0]]["alpha"]["7d"].n == 6
    full_rows = store.latest_results_of(models)
    assert plain["latest_marks_of"] == {
        m: {
            tag: {c: (row.result, row.detail, row.round_id) for c, row in results.items()}
            for tag, results in full_rows[m].items()
        }
        for m in models
    }
    assert plain["latest_marks_of"][models[0]], "the seed should judge the first model"
    quarantine = plain["quarantines"][0]
    assert quarantine.started_at.tzinfo is UTC and isinstance(quarantine.causes, tuple)


def test_a_missing_database_is_an_error_of_the_store_not_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    light = LightStore(f"sqlite:///{path}")
    with pytest.raises(light.errors):
        light.known_models()
    light.dispose()
    assert not path.exists()


def test_an_unreachable_postgresql_is_an_error_of_the_store() -> None:
    light = LightStore("postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    with pytest.raises(light.errors):
        light.known_models()


@pytest.mark.parametrize(
    ("url", "light"),
    [
        ("sqlite:///canary.db", True),
        ("sqlite:////var/lib/canary/canary.db", True),
        ("postgresql://u:p@db:5432/canary", True),
        ("postgres://db/canary", True),
        ("postgresql+psycopg://db/canary?sslmode=require", True),
        ("sqlite://", False),
        ("sqlite:///:memory:", False),
        ("sqlite:///canary.db?timeout=5", False),
        ("mysql://db/canary", False),
    ],
)
def test_the_light_path_takes_the_urls_whose_meaning_is_plain(url: str, light: bool) -> None:
    assert supports(url) is light


def test_a_missing_sqlite_file_is_told_without_sqlalchemy(tmp_path: Path) -> None:
    present = tmp_path / "here.db"
    present.touch()
    assert missing_sqlite_file(f"sqlite:///{present}") is None
    assert missing_sqlite_file(f"sqlite:///{tmp_path / 'gone.db'}") == tmp_path / "gone.db"
    assert missing_sqlite_file(f"sqlite:///{tmp_path / 'a%20b.db'}") == tmp_path / "a b.db"
    assert missing_sqlite_file("sqlite://") is None
    assert missing_sqlite_file("postgresql://db/canary") is None


def test_every_column_the_store_types_is_converted_on_the_plain_path() -> None:
    wanted: dict[str, dict[str, str]] = {}
    for table in t.metadata.sorted_tables:
        kinds = {}
        for column in table.columns:
            if isinstance(column.type, t.UTCDateTime):
                kinds[column.name] = "time"
            elif isinstance(column.type, JSON):
                kinds[column.name] = "json"
            elif isinstance(column.type, Boolean):
                kinds[column.name] = "bool"
        wanted[table.name] = kinds
    assert KINDS == wanted


def test_times_are_bound_and_read_as_sqlalchemy_does() -> None:
    moment = datetime(2026, 5, 1, 12, 0, 3, tzinfo=UTC)
    assert sqlite_time(moment) == "2026-05-01 12:00:03.000000"
    assert utc("2026-05-01 12:00:03.000000") == moment
    assert utc(moment.astimezone(datetime.now().astimezone().tzinfo)) == moment
    with pytest.raises(ValueError, match="naive"):
        sqlite_time(datetime(2026, 5, 1))


def test_named_parameters_become_psycopgs_and_casts_stay() -> None:
    assert _to_pyformat("SELECT :a::text, x FROM t WHERE y = :b_2") == (
        "SELECT %(a)s::text, x FROM t WHERE y = %(b_2)s"
    )

    class Postgres:
        dialect = "postgresql"

        def fetch(self, sql: str, params: object) -> tuple[list[str], list[Any]]:
            raise AssertionError("not reached")

    with pytest.raises(ValueError, match="'%'"):
        Reader(Postgres()).values("SELECT 1 WHERE x LIKE 'a%'")
