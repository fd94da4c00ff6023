"""Waiting on a real running system (a daemon, a database) in integration tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout_s: float) -> T:
    """Poll `check` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)  # polling a real system, not timing the code under test
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
