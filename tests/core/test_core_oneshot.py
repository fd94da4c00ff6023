"""A one-shot round's outcome: which models' rounds are not done, and why (a table)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from canary.core.oneshot import unfinished


@dataclass(frozen=True)
class End:
    model: str
    status: str
    error: str | None = None


LISTING = "listing endpoints of acme/a failed (provider_error): connection refused"


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        ([End("acme/a", "finished")], []),
        ([End("acme/a", "claimed_elsewhere")], []),  # the slot ran elsewhere: nothing to redo
        ([End("acme/a", "abandoned", LISTING)], [f"acme/a: round abandoned: {LISTING}"]),
        ([End("acme/a", "abandoned")], ["acme/a: round abandoned"]),  # even with no reason
        ([End("acme/a", "lost", "reclaimed")], ["acme/a: round lost: reclaimed"]),
        # the decision committed, something after it failed: still worth a look
        ([End("acme/a", "finished", "OSError: x")], ["acme/a: round finished: OSError: x"]),
        (
            [End("acme/a", "finished"), End("acme/b", "abandoned"), End("acme/c", "lost")],
            ["acme/b: round abandoned", "acme/c: round lost"],
        ),
        ([], []),
    ],
)
def test_unfinished_names_each_model_whose_round_is_not_done(
    ends: list[End], expected: list[str]
) -> None:
    assert unfinished(ends) == expected
