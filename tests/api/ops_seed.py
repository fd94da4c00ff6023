"""Seeds a real store with a small, known fleet, through the store's own public API.

One model, six providers, two finished rounds, in states that cover every case the ops surface
shows: alpha healthy, bravo quarantined, charlie/fp8 suspect (one failing round), delta excluded
at runtime, echo excluded by the built-in list, foxtrot healthy but slow (latency degraded: a
separate field, information only).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from builders import endpoint, observation, result, ttft, verdict
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.config.settings import ModelSettings, Settings
from canary.core.events import event_of
from canary.core.model import (
    Contract,
    Endpoint,
    EndpointState,
    EventKind,
    Exclusion,
    Layer,
    Look,
    Pricing,
    Result,
    RoundVerdict,
    Streak,
    Verdict,
)
from canary.core.quarantine import QuarantineStart
from canary.service.ignore_list import IgnoreListService
from canary.store.repository import Store

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/chat-1"
TAGS = ("alpha", "bravo", "charlie/fp8", "delta", "echo", "foxtrot")
TTFT = {"alpha": 0.8, "bravo": 1.1, "charlie/fp8": 1.4, "delta": 0.9, "echo": 1.0, "foxtrot": 7.5}
# OpenRouter's advertised time to first token (ms), as the endpoints list gives it.
ADVERTISED = {"p50": 640.0, "p75": 900.0, "p90": 1500.0, "p99": 4000.0}
ROUND_COSTS = (0.0015, 0.0025)  # USD of the first and the second round
TOKEN = "s3cret-admin-token"
POLICY = "p-test000001"


@dataclass(frozen=True)
class Seeded:
    model: str
    rounds: tuple[int, ...]
    exclusion_id: int
    quarantine_until: datetime
    looks: tuple[Look, ...] = ()  # the rounds as looks (their starts): the quarantine's evidence


def builtin(model: str = MODEL) -> tuple[Exclusion, ...]:
    return (
        Exclusion(
            model=model,
            tag="echo",
            layer=Layer.builtin,
            reason="measured: stray leading tokens in 19 of 20 answers",
            since=datetime(2026, 1, 10, tzinfo=UTC),
        ),
    )


def settings(
    url: str, *models: str, token: str = TOKEN, daily_budget_usd: float | None = None
) -> Settings:
    return Settings(
        database_url=url,
        models=tuple(ModelSettings(id=m) for m in (models or (MODEL,))),
        admin_token=token,
        interval_minutes=30,
        daily_budget_usd=daily_budget_usd,
    )


def _verdict(model: str, tag: str, round_no: int) -> RoundVerdict:
    hygiene_fails = tag == "bravo" or (tag == "charlie/fp8" and round_no == 2)
    hygiene = result(
        Contract.hygiene,
        Result.fail if hygiene_fails else Result.passed,
        "answer starts with a stray fragment ' ,'" if hygiene_fails else "clean start",
        reason="stray_prefix" if hygiene_fails else None,
    )
    outcome = Verdict.fail if hygiene_fails else Verdict.passed
    return verdict(model, tag, outcome, ttft(TTFT[tag]), hygiene)


def seed(store: Store, model: str = MODEL, now: datetime = NOW) -> Seeded:
    """Two finished rounds 60 and 30 minutes before ``now``; bravo quarantined after the second."""
    s = store
    # every endpoint can serve every need: a needs list counts them all as capacity
    parameters = ("max_tokens", "response_format", "structured_outputs", "tools")
    endpoints = [
        endpoint(tag, *parameters, model=model, latency_last_30m=dict(ADVERTISED)) for tag in TAGS
    ]
    rounds = []
    looks = []
    for round_no, at in ((1, now - timedelta(minutes=60)), (2, now - timedelta(minutes=30))):
        rid = s.claim_round(model, at, "seed", POLICY, {"hygiene": "abc"}, started_at=at)
        assert rid is not None
        rounds.append(rid)
        looks.append(Look.round(rid, at))
        s.record_snapshots(rid, model, endpoints, at)
        observations = [
            observation(
                Contract.ttft,
                tag,
                ttft_s=TTFT[tag] + 0.01 * sample,
                nonce=f"{rid}-{tag}-{sample}",
                attempt=sample + 1,
            )
            for tag in TAGS
            for sample in range(3)
        ]
        s.record_observations(rid, model, observations, at)
        s.record_verdicts(rid, model, {tag: _verdict(model, tag, round_no) for tag in TAGS})
        s.finish_round(
            rid, "finished", cost_usd=ROUND_COSTS[round_no - 1], at=at + timedelta(minutes=2)
        )
    since = now - timedelta(minutes=30)
    until = since + timedelta(days=1)
    evidence = tuple(looks)
    after = {
        tag: EndpointState(model=model, tag=tag)
        for tag in TAGS
        if tag not in ("bravo", "charlie/fp8")
    }
    after["bravo"] = EndpointState(
        model=model,
        tag="bravo",
        streaks=(Streak(Contract.hygiene, 2, since, evidence),),
        quarantined_since=since,
        quarantined_until=until,
        causes=("hygiene",),
        ladder_step=1,
        last_quarantine_at=since,
    )
    after["charlie/fp8"] = EndpointState(
        model=model,
        tag="charlie/fp8",
        streaks=(Streak(Contract.hygiene, 1, since, (looks[1],)),),
    )
    reason = "hygiene failed 2 rounds in a row: stray leading fragment"
    applied = s.apply_decision(
        round_id=rounds[1],
        model=model,
        before={},
        after=after,
        events=[
            event_of(
                EventKind.quarantine,
                model,
                "bravo",
                {"until": until.isoformat(), "step": 1, "reason": reason},
                evidence,
            )
        ],
        quarantines_started=[
            QuarantineStart(model, "bravo", since, until, 1, reason, evidence, ("hygiene",))
        ],
        actor="canary",
        policy_version=POLICY,
        at=since,
    )
    assert applied
    exclusion_id = s.add_exclusion(
        model,
        "delta",
        "incident 42: timeouts in eu",
        "seed",
        None,
        now - timedelta(minutes=10),
        builtin=builtin(model),
        floor=0,
    ).id
    return Seeded(
        model=model,
        rounds=tuple(rounds),
        exclusion_id=exclusion_id,
        quarantine_until=until,
        looks=evidence,
    )


def relist(store: Store, model: str, tags: tuple[str, ...], at: datetime) -> None:
    """A finished round at ``at`` whose listing has these endpoints only (the latest listing)."""
    rid = store.claim_round(model, at, "seed", POLICY, {}, started_at=at)
    assert rid is not None
    endpoints = [
        Endpoint(
            model=model, tag=t, provider_name=t.split("/")[0].title(), pricing=Pricing(1e-7, 2e-7)
        )
        for t in tags
    ]
    store.record_snapshots(rid, model, endpoints, at)
    store.finish_round(rid, "finished", at=at)


_models = itertools.count(1)


class Clock:
    """A hand-driven clock: tests move it, nothing sleeps."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Api:
    """One seeded model of its own, with the service and a client over the ASGI app."""

    def __init__(
        self,
        store: Store,
        *,
        token: str = TOKEN,
        model: str | None = None,
        daily_budget_usd: float | None = None,
    ) -> None:
        self.model = model or f"acme/model-{next(_models)}"
        self.seeded = seed(store, self.model)
        self.store = store
        self.clock = Clock()
        self.settings = settings(
            store.url, self.model, token=token, daily_budget_usd=daily_budget_usd
        )
        self.service = IgnoreListService(
            store,
            builtin(self.model),
            [self.model],
            POLICY,
            self.clock,
            floor_of=lambda m: self.settings.model(m).capacity_floor,
        )
        assert self.service.refresh()
        self.app = create_app(self.settings, store, self.service, clock=self.clock)
        self.client = TestClient(self.app, raise_server_exceptions=True)

    def admin(self, token: str = TOKEN) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def ignore(self) -> list[str]:
        response = self.client.get("/v1/ignore-list", params={"model": self.model})
        assert response.status_code == 200
        return list(response.json()["ignore"])


def quarantine(api: Api, tag: str, contract: Contract, minutes_ago: int) -> None:
    """``tag`` quarantined ``minutes_ago`` for ``contract`` alone, through the store's own API."""
    since = api.clock.now - timedelta(minutes=minutes_ago)
    until = since + timedelta(days=1)
    cause = contract.value
    looks = (Look.round(1, since - timedelta(minutes=30)), Look.round(2, since))
    state = EndpointState(
        api.model, tag, streaks=(Streak(contract, 2, since, looks),), quarantined_since=since,
        quarantined_until=until, causes=(cause,), ladder_step=1, last_quarantine_at=since,
    )  # fmt: skip
    start = QuarantineStart(api.model, tag, since, until, 1, f"{cause} broke", looks, (cause,))
    assert api.store.apply_decision(
        round_id=None, model=api.model, before=api.store.load_states(api.model),
        after={tag: state}, events=[], quarantines_started=[start], actor="canary",
        policy_version=POLICY, at=since,
    )  # fmt: skip
