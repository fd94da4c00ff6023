"""What probing costs, in USD. Pure.

OpenRouter reports the cost of a generation in the usage chunk (``usage.cost``); when it is
missing the cost is estimated from the endpoint's published per-token prices. Negative prices
(OpenRouter uses -1 for "variable" on router pseudo-models) count as zero rather than as income.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from canary.core.model import Endpoint, Pricing, Usage

# A probe's prompt tokens in a round's estimate (system and user prompt, rounded up); with the
# whole max_tokens out, what the runner's budget and `canary probe --estimate` count.
ESTIMATE_PROMPT_TOKENS = 250


def _price(value: float) -> float:
    return value if value > 0 else 0.0


def token_cost(prompt_tokens: int, completion_tokens: int, pricing: Pricing) -> float:
    return max(0, prompt_tokens) * _price(pricing.prompt) + max(0, completion_tokens) * _price(
        pricing.completion
    )


def probe_cost(usage: Usage, pricing: Pricing) -> float:
    """The reported cost when present, else tokens × the endpoint's prices (missing counts as 0)."""
    if usage.cost_usd is not None:
        return max(0.0, usage.cost_usd)
    return token_cost(usage.prompt_tokens or 0, usage.completion_tokens or 0, pricing)


def estimate_round_cost(
    endpoints: Iterable[Endpoint],
    probes_per_endpoint: int | Callable[[Endpoint], int],
    prompt_tokens: int,
    completion_tokens: int,
) -> float:
    """An upper-bound estimate of one round: every probe uses ``prompt_tokens`` in and the full
    ``completion_tokens`` (usually ``max_tokens``) out, at each endpoint's prices."""
    total = 0.0
    for endpoint in endpoints:
        count = (
            probes_per_endpoint(endpoint) if callable(probes_per_endpoint) else probes_per_endpoint
        )
        total += max(0, count) * token_cost(prompt_tokens, completion_tokens, endpoint.pricing)
    return total
