"""A fleet for the metrics tests and benchmark: many models, seeded through the store's own API,
and the series of one ``/metrics`` scrape counted per metric.

Each model gets one finished round with every endpoint listed, judged and timed (three time to
first token samples each, so every latency quantile exists), its first endpoint quarantined and
its second suspect: the widest scrape a fleet of that size gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.config.settings import ModelSettings, ProfileSettings, Settings
from canary.core.model import (
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Look,
    Observation,
    Pricing,
    Result,
    RoundVerdict,
    Streak,
    Transport,
    Verdict,
)
from canary.core.quarantine import QuarantineStart
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store

POLICY = "p-fleet00001"


def fleet_models(models: int, prefix: str = "fleet") -> list[str]:
    return [f"{prefix}/model-{m:03d}" for m in range(models)]


def fleet_tags(per_model: int) -> list[str]:
    return [f"host{p:02d}" for p in range(per_model)]


def seed_fleet(
    store: Store, models: Sequence[str], per_model: int, now: datetime, *, duration_s: float = 90
) -> None:
    """One finished round per model, 30 minutes before ``now``, lasting ``duration_s``."""
    at = now - timedelta(minutes=30)
    tags = fleet_tags(per_model)
    for model in models:
        rid = store.claim_round(model, at, "fleet", POLICY, {}, started_at=at)
        assert rid is not None
        store.record_snapshots(
            rid,
            model,
            [
                Endpoint(model=model, tag=t, provider_name=t, pricing=Pricing(1e-7, 2e-7))
                for t in tags
            ],
            at,
        )
        store.record_observations(
            rid,
            model,
            [
                Observation(
                    contract=Contract.ttft,
                    tag=tag,
                    transport=Transport.ok,
                    ttft_s=0.5 + 0.1 * p + 0.01 * sample,
                    nonce=f"{rid}-{tag}-{sample}",
                    attempt=sample + 1,
                )
                for p, tag in enumerate(tags)
                for sample in range(3)
            ],
            at,
        )
        # every contract judged conclusively: the widest canary_probe_success
        passed = tuple(ContractResult(c, Result.passed, "ok") for c in Contract)
        store.record_verdicts(
            rid, model, {t: RoundVerdict(model, t, Verdict.passed, passed) for t in tags}
        )
        store.finish_round(rid, "finished", cost_usd=0.001, at=at + timedelta(seconds=duration_s))
        _quarantine_first_and_suspect_second(store, model, tags, rid, at)


def _quarantine_first_and_suspect_second(
    store: Store, model: str, tags: Sequence[str], round_id: int, at: datetime
) -> None:
    until = at + timedelta(days=1)
    evidence = (Look.round(round_id, at),)
    after = {tag: EndpointState(model=model, tag=tag) for tag in tags[2:]}
    after[tags[0]] = EndpointState(
        model=model,
        tag=tags[0],
        streaks=(Streak(Contract.hygiene, 2, at, evidence),),
        quarantined_since=at,
        quarantined_until=until,
        causes=("hygiene",),
        ladder_step=1,
        last_quarantine_at=at,
    )
    after[tags[1]] = EndpointState(
        model=model, tag=tags[1], streaks=(Streak(Contract.hygiene, 1, at, evidence),)
    )
    assert store.apply_decision(
        round_id=round_id,
        model=model,
        before={},
        after=after,
        events=[],
        quarantines_started=[
            QuarantineStart(model, tags[0], at, until, 1, "hygiene", evidence, ("hygiene",))
        ],
        actor="canary",
        policy_version=POLICY,
        at=at,
    )


def fleet_client(
    store: Store,
    models: Sequence[str],
    now: datetime,
    *,
    daily_budget_usd: float | None = 5.0,
    profiles: Sequence[ProfileSettings] = (),
) -> TestClient:
    """The real ASGI app over ``store`` watching ``models``, its lists read, its clock at ``now``
    (``profiles``: task profiles, each with its own lists)."""
    settings = Settings(
        database_url=store.url,
        models=tuple(ModelSettings(id=m) for m in models),
        daily_budget_usd=daily_budget_usd,
        profiles=tuple(profiles),
    )
    service = IgnoreListService(
        store, (), list(models), POLICY, lambda: now, profiles=settings.profile_rules
    )
    assert service.refresh()
    return TestClient(create_app(settings, store, service, clock=lambda: now))


def series_by_metric(exposition: str) -> Counter[str]:
    """Series of one scrape per metric as README names them: a counter with its ``_total``, a
    histogram by its base name (its buckets, sum and count together)."""
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(exposition):
        name = family.name + "_total" if family.type == "counter" else family.name
        out[name] += len(family.samples)
    return out


def scraped(exposition: str, name: str, **labels: str) -> float | None:
    """The value of the one sample ``name`` with (at least) these labels; None when absent."""
    found = [
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None
