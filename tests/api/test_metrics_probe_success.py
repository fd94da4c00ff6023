"""Per-endpoint success series, as blackbox_exporter gives them: each contract's latest judged
result (1 pass, 0 fail, absent otherwise), the latest time to first token, and the count of
conclusive results in the model's latest round, which the CanaryNoConclusiveProbes rule reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from builders import endpoints, observation
from metrics_fleet import POLICY, fleet_client, scraped

from canary.core.model import Contract, ContractResult, Result, RoundVerdict, Verdict
from canary.store.repository import Store

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MODEL = "acme/success-1"


def _round(
    store: Store,
    at: datetime,
    verdicts: dict[str, tuple[ContractResult, ...]],
    model: str = MODEL,
) -> None:
    """A finished round of ``model`` at ``at``: ``verdicts``' tags listed and judged, and one
    first-token sample of alpha (later rounds, slower samples)."""
    rid = store.claim_round(model, at, "t", POLICY, {}, started_at=at)
    assert rid is not None
    store.record_snapshots(rid, model, endpoints(model, *verdicts), at)
    sample = observation(
        ttft_s=0.8 + (at - NOW).total_seconds() / 36_000, nonce=f"{rid}-alpha", attempt=1
    )
    store.record_observations(rid, model, [sample], at)
    store.record_verdicts(
        rid,
        model,
        {t: RoundVerdict(model, t, Verdict.passed, results) for t, results in verdicts.items()},
    )
    store.finish_round(rid, "finished", cost_usd=0.001, at=at + timedelta(seconds=60))


def test_each_contract_of_the_latest_round_is_one_zero_or_absent(store: Store) -> None:
    _round(
        store,
        NOW - timedelta(hours=1),
        {"alpha": (ContractResult(Contract.schema, Result.passed, "ok"),), "bravo": ()},
    )
    _round(
        store,
        NOW - timedelta(minutes=30),
        {
            "alpha": (
                ContractResult(Contract.ttft, Result.passed, "ok"),
                ContractResult(Contract.schema, Result.fail, "not valid JSON"),
                ContractResult(Contract.language, Result.inconclusive, "too short"),
            ),
            "bravo": (ContractResult(Contract.ttft, Result.transport_error, "HTTP 503"),),
        },
    )
    text = fleet_client(store, [MODEL], NOW).get("/metrics").text

    def success(provider: str, contract: str) -> float | None:
        return scraped(
            text, "canary_probe_success", model=MODEL, provider=provider, contract=contract
        )

    assert (success("alpha", "ttft"), success("alpha", "schema")) == (1.0, 0.0)
    assert success("alpha", "language") is None  # inconclusive: no evidence either way
    assert success("bravo", "ttft") is None  # a transport error is no evidence
    assert scraped(text, "canary_conclusive_probes", model=MODEL) == 2.0
    last = scraped(text, "canary_ttft_last_seconds", model=MODEL, provider="alpha")
    assert last == 0.8 - 1800 / 36_000  # the later of the two rounds' samples
    assert scraped(text, "canary_ttft_last_seconds", model=MODEL, provider="bravo") is None


def test_a_latest_round_with_nothing_conclusive_counts_zero(store: Store) -> None:
    model = "acme/blind-1"
    _round(
        store,
        NOW - timedelta(hours=1),
        {"alpha": (ContractResult(Contract.ttft, Result.passed, "ok"),)},
        model,
    )
    _round(
        store,
        NOW - timedelta(minutes=30),
        {"alpha": (ContractResult(Contract.ttft, Result.transport_error, "timeout"),)},
        model,
    )
    text = fleet_client(store, [model], NOW).get("/metrics").text
    assert scraped(text, "canary_conclusive_probes", model=model) == 0.0
