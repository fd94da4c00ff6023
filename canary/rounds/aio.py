"""Running a coroutine to completion on the fastest event loop available.

A round reads thousands of streams of one small chunk per token: on uvloop (which uvicorn's
standard extra brings) the reads, the pauses between them and the timers cost less CPU than on
asyncio's own loop (docs/performance.md). Where uvloop is not installed (it does not build on
Windows), asyncio's loop runs the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, on uvloop when it is installed."""
    result: list[T] = []

    async def kept() -> None:
        # The main task ends with no result: on its way out, asyncio.Runner looks its SIGINT
        # handler up as a signal number, and the failed lookup formats that handler, the task
        # and the task's result (for a round, every observation of it: a repr of the whole
        # round, twice, that nobody reads).
        result.append(await main)

    try:
        import uvloop
    except ImportError:
        asyncio.run(kept())
    else:
        uvloop.run(kept())
    return result[0]
