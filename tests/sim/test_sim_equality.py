"""The simulator's equality model: a real distribution, and the faults that shift it."""

from __future__ import annotations

import random
from collections import Counter

import httpx
from sim_helpers import body, content, events, pin

from canary.sim.ngram import ANSWER_WORDS, equality_answer, model_of
from canary.sim.scenario import FaultKind, Quantized, parse_faults
from canary.sim.server import RunningSimulator

STORY = "Continue the story in about thirty words, in the same voice:\nFog rolls in while the"
SUM = "What is 17 plus 25? Answer with the number only."
COPY = "Repeat exactly, and nothing else: amber river seven"


def _first_words(n: int, seed: int, **fault: float | bool) -> Counter[str]:
    rng = random.Random(seed)
    return Counter(
        " ".join((equality_answer(STORY, 1.0, rng, **fault) or "").split()[:2]) for _ in range(n)
    )


def test_story_prompts_are_sampled_and_other_prompts_are_not_ours() -> None:
    rng = random.Random(1)
    answers = {equality_answer(STORY, 1.0, rng) for _ in range(20)}
    assert len(answers) > 10  # a distribution, not one answer
    assert all(len((a or "").split()) == ANSWER_WORDS for a in answers)
    assert equality_answer("Continue the scene in the tavern.", 1.0, rng) is None


def _distance(a: Counter[str], b: Counter[str]) -> float:
    """Total variation between two samples' frequencies."""
    na, nb = sum(a.values()), sum(b.values())
    return sum(abs(a[k] / na - b[k] / nb) for k in a.keys() | b.keys()) / 2


def test_identical_providers_draw_from_one_distribution() -> None:
    """Two seeds, the same sampler: the continuations' openings are close in frequency, and
    further apart from a sharper sampler's."""
    a, b = _first_words(400, 1), _first_words(400, 2)
    assert _distance(a, b) < _distance(a, _first_words(400, 2, quantized=0.6))


def test_a_lower_temperature_concentrates_the_distribution() -> None:
    plain, cold = _first_words(400, 3), _first_words(400, 3, quantized=0.6)
    assert len(cold) < len(plain)
    assert cold.most_common(1)[0][1] > plain.most_common(1)[0][1]


def test_substituted_draws_from_another_text() -> None:
    rng = random.Random(4)
    answer = equality_answer(STORY, 1.0, rng, substituted=True) or ""
    assert set(answer.split()) <= set(model_of(True).unigram)
    assert model_of(True).unigram != model_of(False).unigram


def test_known_answers_are_right_unless_the_template_is_broken() -> None:
    rng = random.Random(5)
    assert equality_answer(SUM, 0.0, rng) == "42"
    assert equality_answer(COPY, 0.0, rng) == "amber river seven"
    assert equality_answer(SUM, 0.0, rng, quantized=0.6, substituted=True) == "42"
    assert equality_answer(SUM, 0.0, rng, template_broken=True) != "42"
    assert equality_answer(COPY, 0.0, rng, template_broken=True) != "amber river seven"


def test_the_faults_parse_with_their_defaults() -> None:
    quantized, substituted, broken = parse_faults(
        [{"kind": "quantized"}, {"kind": "substituted"}, {"kind": "template_broken"}]
    )
    assert isinstance(quantized, Quantized) and quantized.temperature == 0.8
    assert substituted.kind is FaultKind.substituted
    assert broken.kind is FaultKind.template_broken


def test_on_the_wire_the_fault_changes_only_equality_answers(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    ask = lambda text: content(  # noqa: E731
        events(client.post("/chat/completions", json=body(text, provider=pin("alpha"))).text)
    )
    scene = ask("Continue the scene in the tavern, please.")
    sim.state.set_faults("acme/roleplay-1", "alpha", [{"kind": "template_broken"}])
    assert ask("Continue the scene in the tavern, please.").split()[0] == scene.split()[0]
    assert ask(SUM) != "42"
    sim.state.set_faults("acme/roleplay-1", "alpha", [])
    assert ask(SUM) == "42"
    assert len(ask(STORY).split()) == ANSWER_WORDS
