"""`canary round` as cron runs it: the installed command in its own process. A store it cannot
open is one line (the password never in it), whether PostgreSQL is down or a SQLite path cannot
be opened; an abandoned round exits 1; a slot that already ran says when and by which replica
and exits 0, even after many extra rounds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import CliRunner

from canary.cli.main import app
from canary.core.plan import slot_of
from canary.service.ports import free_port
from canary.store.repository import Store

CANARY = Path(sys.executable).parent / "canary"
INTERVAL = timedelta(minutes=30)
PASSWORD = "pg-pass-s3cret"
OTHER = "other-host:41"


def canary(
    args: list[str], cwd: Path, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    """The installed command, with only the settings given here (none from the test's shell)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CANARY_", "OPENROUTER_"))}
    return subprocess.run(
        [str(CANARY), *args],
        cwd=cwd,
        env={**base, "CANARY_LOG_FORMAT": "json", "OPENROUTER_API_KEY": "sk-or-round", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.slow
def test_postgresql_down_is_one_line_without_the_password(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there: a PostgreSQL that is down
    done = canary(
        ["round"],
        tmp_path,
        CANARY_DATABASE_URL=f"postgresql+psycopg://canary:{PASSWORD}@127.0.0.1:{port}/canary",
        CANARY_STARTUP_WAIT_S="0",
        CANARY_MODELS="acme/round-pg",
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        f"canary: cannot reach the store at postgresql+psycopg://canary:***@127.0.0.1:{port}/canary"
        " (tried once in 0 s): connection failed: "
    ), done.stderr
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.slow
def test_postgresql_down_is_retried_for_the_startup_wait_like_serve(tmp_path: Path) -> None:
    port = free_port()
    done = canary(
        ["round"],
        tmp_path,
        CANARY_DATABASE_URL=f"postgresql+psycopg://canary:{PASSWORD}@127.0.0.1:{port}/canary",
        CANARY_STARTUP_WAIT_S="1",
        CANARY_MODELS="acme/round-pg",
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 1
    assert [line for line in lines if '"store_unreachable"' in line][:2], lines  # retried
    assert re.fullmatch(
        r"canary: cannot reach the store at \S+ \(tried \d+ times in 1 s\): connection failed: .+",
        lines[-1],
    ), lines
    assert not [line for line in lines if "Traceback" in line]
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("missing/canary.db", "directory {tmp}/missing does not exist"),
        # a dangling link passes every path check; SQLite cannot open it
        ("dangling.db", "unable to open database file"),
    ],
    ids=["missing folder", "dangling link"],
)
def test_an_unopenable_sqlite_path_is_one_line_at_once(
    path: str, problem: str, tmp_path: Path
) -> None:
    (tmp_path / "dangling.db").symlink_to(tmp_path / "gone" / "canary.db")
    url = f"sqlite:///{tmp_path / path}"
    # a minute of retries would outlast the timeout: a local file is never waited for
    done = canary(
        ["round"], tmp_path, timeout=30, CANARY_DATABASE_URL=url, CANARY_STARTUP_WAIT_S="60",
        CANARY_MODELS="acme/round-sqlite",
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"canary: cannot open the store at {url}: {problem.format(tmp=tmp_path)}\n"
    )


@pytest.mark.slow
def test_an_abandoned_round_exits_1_naming_the_model_and_why(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    config = tmp_path / "canary.toml"
    config.write_text(
        f'database_url = "{url}"\n'
        '[openrouter]\nbase_url = "http://127.0.0.1:{port}/api/v1"\n'
        "connect_timeout_s = 0.2\nlisting_deadline_s = 0.3\n"
        '[[models]]\nid = "acme/round-down"\n'.replace("{port}", str(free_port())),
        encoding="utf-8",
    )
    done = canary(["--config", str(config), "round"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert re.fullmatch(
        r"acme/round-down: round \d+ abandoned; verdicts -; decisions -; cost \$0\.000000\n",
        done.stdout,
    )
    last = done.stderr.splitlines()[-1]
    assert last.startswith(
        "canary: round not done: acme/round-down: round abandoned: listing endpoints of "
        "acme/round-down failed ("
    ), done.stderr
    with Store(url) as store:
        assert [r.status for r in store.recent_rounds("acme/round-down")] == ["abandoned"]


def _seed_ran(store: Store, model: str, slot: datetime) -> int:
    """The round of ``slot`` run by another replica, started 4 s and finished 9 s into it."""
    rid = store.claim_round(model, slot, OTHER, "p", {}, started_at=slot + timedelta(seconds=4))
    assert rid is not None
    store.finish_round(rid, "finished", at=slot + timedelta(seconds=9))
    return rid


def _already_ran(model: str, rid: int, slot: datetime) -> str:
    stamp = slot.strftime("%Y-%m-%dT%H:%M")
    return (
        f"{model}: this slot ({stamp}:00Z) already ran: round {rid}, started {stamp}:04Z by "
        f"{OTHER}, finished at {stamp}:09Z; the next round runs at the next slot\n"
    )


def _seed_slots(url: str, model: str, extra_rounds: int = 0) -> list[str]:
    """This slot and the next one already ran elsewhere (the run may start in either), each
    followed by ``extra_rounds`` extra rounds; the line each slot's run must print."""
    expected = []
    with Store(url) as store:
        store.upgrade()
        slot = slot_of(datetime.now(UTC), INTERVAL.total_seconds() / 60)
        for at in (slot, slot + INTERVAL):
            rid = _seed_ran(store, model, at)
            expected.append(_already_ran(model, rid, at))
            for k in range(1, extra_rounds + 1):
                extra_at = at + timedelta(minutes=k)
                xid = store.claim_round(model, extra_at, "me:1", "p", {}, extra=True)
                assert xid is not None
                store.finish_round(xid, "finished", detail={"extra": True}, at=extra_at)
    return expected


@pytest.mark.slow
def test_round_in_a_slot_that_already_ran_says_when_and_by_whom_as_a_process(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    expected = _seed_slots(url, "acme/ran-process")
    done = canary(
        ["round"],
        tmp_path,
        CANARY_DATABASE_URL=url,
        CANARY_MODELS="acme/ran-process",
        CANARY_OPENROUTER_BASE_URL=f"http://127.0.0.1:{free_port()}/api/v1",  # never asked
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout in expected
    assert not [line for line in done.stderr.splitlines() if line.startswith("canary:")]


def test_the_slot_round_is_found_after_many_extra_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'canary.db'}"
    expected = _seed_slots(url, "acme/ran-extra", extra_rounds=7)
    for name, value in {
        "CANARY_DATABASE_URL": url,
        "CANARY_MODELS": "acme/ran-extra",
        "CANARY_OPENROUTER_BASE_URL": f"http://127.0.0.1:{free_port()}/api/v1",
        "OPENROUTER_API_KEY": "sk-or-round",
    }.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["round"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout in expected
