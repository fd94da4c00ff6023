"""Each endpoint's failed probes over 24 h (``error_figures``, a task profile's
``max_error_rate``): counted as a round finishes, from the 24 h before it, leaving out what says
nothing of the provider (429, auth, our bad requests, another provider answering) and the probes
of abandoned rounds; read with the 24 h p95 as one row or two per endpoint (SQLite and
PostgreSQL)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from builders import endpoint, observation

from canary.core.model import Contract, Layer, Transport
from canary.core.profiles import Measured
from canary.store import Store

T0 = datetime(2026, 8, 1, tzinfo=UTC)
RUN = itertools.count(1)


def round_of(
    store: Store, model: str, at: datetime, wires: list[Transport], *, status: str = "finished"
) -> None:
    rid = store.claim_round(model, at, "test", "p-1", {}, started_at=at)
    assert rid is not None
    store.record_snapshots(rid, model, [endpoint("alpha", model=model)], at)
    observations = [
        observation(Contract.ttft, "alpha", wire, nonce=f"{rid}-{i}",
                    ttft_s=0.5 if wire is Transport.ok else None)
        for i, wire in enumerate(wires)
    ]  # fmt: skip
    observations.append(
        observation(Contract.ttft, "alpha", Transport.provider_error, nonce=f"{rid}-x",
                    attribution_ok=False)
    )  # fmt: skip
    store.record_observations(rid, model, observations, at)
    if status == "finished":
        store.finish_round(rid, "finished", at=at + timedelta(minutes=1))
    else:
        store.abandon_rounds_of("test", at + timedelta(minutes=1), why="test")


def measured(store: Store, model: str) -> Measured | None:
    from canary.store.latency import measured_of

    with store.engine.connect() as conn:
        return measured_of(conn, [model])[model].get("alpha")


def test_a_days_failed_probes_are_counted_as_the_round_finishes(store: Store) -> None:
    model = f"acme/errors-{next(RUN)}"
    ok, bad = Transport.ok, Transport.provider_error
    # a day and a half ago: out of the window of the last round
    round_of(store, model, T0 - timedelta(hours=36), [bad] * 5)
    # abandoned: never counted
    round_of(store, model, T0 - timedelta(hours=2), [bad] * 5, status="abandoned")
    others = [Transport.rate_limited, Transport.auth_config, Transport.bad_request]
    round_of(store, model, T0 - timedelta(hours=1), [ok, ok, bad, Transport.timeout, *others])
    round_of(store, model, T0, [ok, ok, ok, bad])
    figures = measured(store, model)
    assert figures is not None
    assert (figures.probes, figures.errors) == (8, 3)
    assert figures.ttft_samples == 5 and figures.ttft_p95_s == 0.5


def test_probes_inside_a_maintenance_window_count_in_no_figure(store: Store) -> None:
    model = f"acme/errors-{next(RUN)}"
    ok, bad = Transport.ok, Transport.provider_error
    # the provider slug's window covers the round at T0 - 1 h, and has ended by T0
    window = store.add_maintenance(
        model, "alpha", "upgrade", "cli:ops", T0 - timedelta(minutes=30), T0 - timedelta(hours=2)
    )
    round_of(store, model, T0 - timedelta(hours=1), [bad, bad, bad, Transport.timeout])
    round_of(store, model, T0, [ok, ok, bad])
    figures = measured(store, model)
    assert figures is not None
    assert (figures.probes, figures.errors) == (3, 1)
    assert figures.ttft_samples == 2
    # a window removed early stops leaving probes out from its removal
    store.remove_exclusion(window, "cli:ops", "done", T0 - timedelta(hours=1, minutes=30),
                           layer=Layer.maintenance)  # fmt: skip
    round_of(store, model, T0 + timedelta(minutes=30), [ok])
    figures = measured(store, model)
    assert figures is not None
    assert (figures.probes, figures.errors) == (8, 5)
