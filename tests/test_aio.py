"""canary.rounds.aio.run: a coroutine to completion, its result handed back untouched."""

from __future__ import annotations

import pytest

from canary.rounds.aio import run


def test_run_returns_what_the_coroutine_returns_and_raises_what_it_raises() -> None:
    async def answer() -> list[int]:
        return [1, 2]

    async def boom() -> None:
        raise KeyError("x")

    assert run(answer()) == [1, 2]
    with pytest.raises(KeyError):
        run(boom())


class Counted:
    formatted = 0

    def __repr__(self) -> str:
        Counted.formatted += 1
        return "Counted()"


def test_the_result_is_never_formatted() -> None:
    """A round's result holds every observation of it: formatting it costs a lot for nothing."""

    async def main() -> Counted:
        return Counted()

    assert isinstance(run(main()), Counted)
    assert Counted.formatted == 0
