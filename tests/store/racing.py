"""Running a store operation in several threads at once, as replicas would."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


def race(n: int, work: Callable[[int], R]) -> list[R]:
    """Run work(i) in n threads released together; return their results in thread order."""
    barrier = threading.Barrier(n)
    results: list[R | None] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]
