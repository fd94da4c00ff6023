"""What the libraries log through the standard library (APScheduler's skipped runs, uvicorn's
errors) comes out like canary's own lines: one JSON object a line in a JSON log, secrets masked,
nothing below WARNING. Before, those records reached stderr raw, in the middle of the JSON."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from canary.service.logs import configure_logging, get_logger, register_secret

SECRET = "sk-or-v1-library-logs-secret"


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    saved = structlog.get_config()
    stream = io.StringIO()  # not a terminal: JSON lines
    register_secret(SECRET)
    configure_logging(None, stream=stream)
    try:
        yield stream
    finally:
        configure_logging(None)
        structlog.configure(**saved)


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_library_warning_is_a_json_line_like_canarys_own(json_log: io.StringIO) -> None:
    get_logger("canary.test").info("round_started", slot="x")
    logging.getLogger("apscheduler.executors.default").warning(
        'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
        "Daemon.run_round",
        1,
    )
    ours, theirs = _lines(json_log)
    assert ours["event"] == "round_started"
    assert theirs["event"] == (
        'Execution of job "Daemon.run_round" skipped: maximum number of running instances '
        "reached (1)"
    )
    assert theirs["level"] == "warning" and theirs["logger"] == "apscheduler.executors.default"
    assert theirs["timestamp"].endswith("Z")


def test_a_library_error_carries_its_traceback_with_secrets_masked(json_log: io.StringIO) -> None:
    try:
        raise RuntimeError(f"upstream said Bearer {SECRET}")
    except RuntimeError:
        logging.getLogger("a.web.server").exception("Exception in ASGI application")
    (line,) = _lines(json_log)
    assert line["event"] == "Exception in ASGI application" and line["level"] == "error"
    assert "RuntimeError: upstream said Bearer ***" in line["exception"]
    assert SECRET not in json_log.getvalue()


def test_library_records_below_warning_are_left_out(json_log: io.StringIO) -> None:
    logging.getLogger("httpx").info("HTTP Request: GET http://127.0.0.1/ 200 OK")
    logging.getLogger("sqlalchemy.engine").debug("SELECT 1")
    assert json_log.getvalue() == ""


def test_configuring_twice_writes_each_record_once(json_log: io.StringIO) -> None:
    configure_logging(None, stream=json_log)
    logging.getLogger("apscheduler.scheduler").warning("Run time of job was missed")
    assert len(_lines(json_log)) == 1


def test_a_closed_log_stream_never_makes_a_library_call_raise(json_log: io.StringIO) -> None:
    json_log.close()
    logging.getLogger("apscheduler.scheduler").warning("Run time of job was missed")
