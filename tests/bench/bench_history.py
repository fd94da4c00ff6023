"""Benchmark: what recording the published history costs the ignore-list refresh (issue 35).

    .venv/bin/python tests/bench/bench_history.py [--models 20] [--refreshes 20]

A SQLite store seeded as tests/api/test_api_profiles.py seeds it (per model, five endpoints with a
round of 24 ttft samples each), the three profiles of that test made to cover every model. For
no profiles and for the three: the CPU of the first refresh (every variant, each needs and
profile one, cut and recorded) and of a refresh that finds nothing moved (the daemon's every
15 s while the lists stay the same: no variant is cut again), without recording and with it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "api")]

from sqlite_template import migrated_sqlite  # noqa: E402
from test_api_profiles import NOW, PROFILES, seed  # noqa: E402

from canary.service.ignore_list import IgnoreListService  # noqa: E402
from canary.store.repository import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--refreshes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(migrated_sqlite(Path(tmp) / "canary.db"))
        models = [f"acme/bench-{i}" for i in range(args.models)]
        for i, model in enumerate(models):
            seed(store, model, NOW + timedelta(seconds=i))
        every = [replace(p.rules, models=()) for p in PROFILES]
        for profiles in ((), every):
            for record in (None, store.record_documents):
                service = IgnoreListService(
                    store, (), models, "p-1", lambda: NOW + timedelta(minutes=1),
                    profiles=profiles, record=record,
                )  # fmt: skip
                started = time.process_time()
                service.refresh()
                first = time.process_time() - started
                started = time.process_time()
                for _ in range(args.refreshes):
                    service.refresh()
                steady = (time.process_time() - started) / args.refreshes
                print(
                    f"{len(profiles)} profiles, {'recorded' if record else 'not recorded'}: "
                    f"first refresh {first * 1000:.1f} ms CPU, unchanged {steady * 1000:.1f} ms "
                    f"({args.models} models)"
                )
        store.dispose()


if __name__ == "__main__":
    main()
