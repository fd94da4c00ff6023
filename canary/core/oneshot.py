"""Whether a one-shot round (`canary round`, run by cron or a script) got done. Pure.

Its exit status answers one question for whoever ran it: is there anything to look at?

- A model's round that ``finished`` here, without error, is done.
- A slot whose round another replica (or an earlier run) already claimed is done too
  (``claimed_elsewhere``): it ran, or is running, there, and running it twice would count one
  slot twice.
- Anything else is not done, with why: ``abandoned`` (OpenRouter unreachable, the listing failed,
  the round raised before its decision: nothing of it counts), ``lost`` (another replica
  reclaimed it after this one stopped beating), ``finished`` with an error (the decision was
  committed, something after it failed), or ``finished`` with every probe stopped at OpenRouter
  itself (:mod:`canary.core.probing`: a missing or rejected key, OpenRouter unreachable), which
  saw nothing of the providers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from canary.core.probing import Stopped

DONE = frozenset({"finished", "claimed_elsewhere"})


class RoundEnd(Protocol):
    """How one model's round of the run ended (the runner's report is one)."""

    @property
    def model(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def error(self) -> str | None: ...

    @property
    def stopped(self) -> Stopped | None: ...


def unfinished(ends: Iterable[RoundEnd]) -> list[str]:
    """One line per model whose round is not done (``model: round <status>[: why]``), in the
    order given; empty when the run did its job."""
    lines = []
    for end in ends:
        if end.status in DONE and end.error is None and end.stopped is None:
            continue
        if end.error:
            why = f": {end.error}"
        elif end.stopped is not None:
            why = f": {end.stopped.describe()}"
        else:
            why = ""
        lines.append(f"{end.model}: round {end.status}{why}")
    return lines
