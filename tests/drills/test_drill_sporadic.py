"""Issue 12, case 9: a healthy fleet with the sporadic noise real hosts show is never quarantined.

The fleet is the soak's (tests/bench/soak_drill.py, ``sporadic``: six hosts, each with 503 10 %,
a slow first token 3 %, broken JSON 1 %, a stray prefix 2 %, light mixing 1 %, disconnects 2 %),
seeded, for twelve hours of rounds (twice the streak's max age) through real drill rounds.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from soak_drill import MODEL, TTFT_THRESHOLD_S, sporadic_fleet

from canary.config.settings import SUPPORTED_LANGUAGES, ModelSettings, OpenRouterSettings, Settings
from canary.rounds.drill import run_drill

# 24 rounds on the real clock, most held up by a rare slow answer: about 20 s, more when loaded
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

ROUNDS = 24
HOSTS = 6


def test_sporadic_noise_on_a_healthy_fleet_quarantines_nobody() -> None:
    settings = Settings(
        languages=SUPPORTED_LANGUAGES,
        ttft_threshold_s=TTFT_THRESHOLD_S,
        models=(ModelSettings(id=MODEL),),
        # a slow answer is cut just past the threshold: the same slow sample, sooner
        openrouter=OpenRouterSettings(first_token_timeout_s=TTFT_THRESHOLD_S + 0.1),
    )
    result = asyncio.run(run_drill(sporadic_fleet(2026), ROUNDS, settings, mode="enforce"))
    lines = result.of_kind("verdict")
    assert len(lines) == ROUNDS * HOSTS  # every host judged every round
    verdicts = Counter(line["verdict"] for line in lines)
    assert verdicts["transport_error"] > 0  # the noise was there: 503s and disconnects
    assert verdicts["pass"] > ROUNDS * HOSTS // 2
    assert result.of_kind("quarantine") == []
    assert result.of_kind("floor_held") == []
    assert result.summary["ignore"] == {MODEL: []}
