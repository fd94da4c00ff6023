"""A one-shot round's outcome: which models' rounds are not done, and why (a table)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from canary.core.oneshot import unfinished
from canary.core.probing import Probing, Stopped


@dataclass(frozen=True)
class End:
    model: str
    status: str
    error: str | None = None
    stopped: Stopped | None = None


LISTING = "listing endpoints of acme/a failed (provider_error): connection refused"
REFUSED = Stopped(Probing.auth_config, "HTTP 401: No auth credentials found")
UNREACHABLE = Stopped(Probing.unreachable, "connect_error: [Errno 111] Connection refused")


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
        # finished, but every probe stopped at OpenRouter itself: it saw no provider
        (
            [End("acme/a", "finished", stopped=REFUSED), End("acme/b", "finished")],
            [
                "acme/a: round finished: OpenRouter refused every probe (auth_config: HTTP 401: "
                "No auth credentials found)"
            ],
        ),  # fmt: skip
        (
            [End("acme/a", "finished", stopped=UNREACHABLE)],
            [
                "acme/a: round finished: no probe could reach OpenRouter (unreachable: "
                "connect_error: [Errno 111] Connection refused)"
            ],
        ),  # fmt: skip
        # an error says more than the stop (the listing's message names the transport)
        (
            [End("acme/a", "abandoned", LISTING, UNREACHABLE)],
            [f"acme/a: round abandoned: {LISTING}"],
        ),
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
