"""A seeded model and its settings file, for the operator CLI tests."""

from __future__ import annotations

import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))  # the shared seeding helper

from ops_seed import Seeded, relist, seed  # noqa: E402

from canary.store.repository import Store  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BUILTIN = """entries:
  - model: {model}
    provider: echo
    reason: "measured: stray leading tokens in 19 of 20 answers"
    since: 2026-01-10
    evidence: "canary probe --model {model} --provider echo"
"""


class Fleet:
    """A model seeded relative to the real clock (the CLI reads the wall clock), and its config."""

    def __init__(
        self, store: Store, tmp: Path, model: str, listing: tuple[str, ...] | None = None
    ) -> None:
        """The six seeded providers of :func:`ops_seed.seed`; with ``listing``, only one
        finished round half an hour ago that listed those endpoints (``seeded`` is None)."""
        self.model = model
        self.store = store
        now = datetime.now(UTC)
        if listing is None:
            self.seeded: Seeded | None = seed(store, model, now=now)
        else:
            relist(store, model, listing, now - timedelta(minutes=30))
            self.seeded = None
        probes = tmp / "probes"
        shutil.copytree(REPO / "probes", probes)
        (probes / "builtin_exclusions.yaml").write_text(
            BUILTIN.format(model=model), encoding="utf-8"
        )
        self.config = tmp / "canary.toml"
        self.config.write_text(
            f'database_url = "{store.url}"\nprobes_dir = "{probes.as_posix()}"\n'
            f'admin_token = "cli-test-token"\n[[models]]\nid = "{model}"\n',
            encoding="utf-8",
        )
