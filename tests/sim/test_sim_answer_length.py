"""The simulator answers canary's prompts at the length they ask for, as real models do.

A latency sample asks for one short sentence and the language probe for 4 to 6: a model that
follows its prompt answers about that much, not the 6-12 sentences the simulator once gave to
every prose request (which made every stream, and every answer to judge, several times longer
than a real one). Any other prompt still gets two or three passages; ``answers: long`` restores
them for canary's prompts too. Over the wire, from the real simulator.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import scenario
from sim_helpers import MODEL, body, content, events, pin

from canary.config.probe_set import NONCE, ProbeSet, load_probes
from canary.config.settings import PROJECT_ROOT, SUPPORTED_LANGUAGES
from canary.sim.server import RunningSimulator, start_simulator
from canary.sim.text import ASKED_SENTENCES, TextBank, detect_language, split_sentences

PROMPTS = PROJECT_ROOT / "probes" / "prompts"


@cache
def _probes() -> ProbeSet:
    return load_probes(PROJECT_ROOT / "probes", SUPPORTED_LANGUAGES)


def _prompt(language: str, kind: str, nonce: str) -> str:
    """The prompt as the prober sends it."""
    template: str = getattr(_probes().prompts[language], kind)
    return template.replace(NONCE, nonce)


def _sentences(client: httpx.Client, prompt: str, language: str) -> int:
    answer = client.post(
        "/chat/completions", json=body(prompt, provider=pin("alpha"), max_tokens=400)
    )
    assert answer.status_code == 200
    return len(split_sentences(content(events(answer.text)), language))


def _client(sim: RunningSimulator) -> httpx.Client:
    return httpx.Client(
        base_url=sim.base_url, headers={"Authorization": "Bearer sk-test"}, timeout=10
    )


@pytest.fixture(scope="module")
def long_answers() -> Iterator[RunningSimulator]:
    with start_simulator({**scenario(), "answers": "long"}) as sim:
        yield sim


# Thai marks no sentence ends: the simulator takes the phrases between spaces of a passage as its
# sentences (a short passage as one), which splitting the joined answer again cannot recover.
COUNTED = [language for language in SUPPORTED_LANGUAGES if language != "th"]


@pytest.mark.parametrize("language", COUNTED)
def test_each_of_canarys_prompts_is_answered_at_the_length_it_asks_for(
    client: httpx.Client, language: str
) -> None:
    for kind, (least, most) in ASKED_SENTENCES.items():
        counts = [_sentences(client, _prompt(language, kind, f"n{i}"), language) for i in range(6)]
        assert all(least <= n <= most for n in counts), (kind, counts)


def test_another_prompt_and_the_long_setting_get_two_or_three_passages(
    client: httpx.Client, long_answers: RunningSimulator
) -> None:
    other = [_sentences(client, f"Continue the scene, please ({i}).", "en") for i in range(6)]
    assert min(other) >= 4, other
    with _client(long_answers) as long_client:
        ttft = [_sentences(long_client, _prompt("en", "ttft", f"n{i}"), "en") for i in range(6)]
    assert min(ttft) >= 4, ttft


def test_the_prompts_the_simulator_knows_are_the_probes_own() -> None:
    # every language file has each kind the simulator sizes, with its nonce
    for path in sorted(Path(PROMPTS).glob("*.yaml")):
        prompts = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert all("{nonce}" in prompts[kind] for kind in ASKED_SENTENCES), path.name


def test_a_mixing_fault_keeps_its_share_in_answers_of_one_or_two_sentences(
    client: httpx.Client, sim: RunningSimulator
) -> None:
    """The mixed-in count is rounded at random: rounded to the nearest, a share of 0.34 of one
    sentence was none, and a short answer never carried the fault."""
    sim.state.set_faults(MODEL, "alpha", [{"kind": "language_mix", "with": "es", "share": 0.34}])
    foreign = total = wholly_foreign = 0
    for i in range(60):
        prompt = _prompt("pt", "ttft", f"mix{i}")
        answer = client.post(
            "/chat/completions", json=body(prompt, provider=pin("alpha"), max_tokens=400)
        )
        sentences = split_sentences(content(events(answer.text)), "pt")
        languages = [detect_language(s) for s in sentences]
        foreign += languages.count("es")
        total += len(sentences)
        wholly_foreign += len(sentences) == 1 and languages == ["es"]
    assert 0.2 <= foreign / total <= 0.5, (foreign, total)
    assert wholly_foreign >= 3


def test_a_bank_of_one_sentence_passages_still_gives_the_length_asked(tmp_path: Path) -> None:
    """The shared corpus, as a text bank, has one sentence a line: two or three of them made
    every answer two or three sentences long, the language probe's 4-6 included."""
    bank = tmp_path / "bank"
    bank.mkdir()
    for language in ("en", "pt"):
        one_a_line = TextBank().sentences[language]  # the built-in bank's, a sentence a line
        (bank / f"{language}.txt").write_text("\n".join(one_a_line) + "\n", encoding="utf-8")
    with (
        start_simulator({**scenario(), "text_bank": str(bank)}) as one_sentence_bank,
        _client(one_sentence_bank) as client,
    ):
        for language in ("en", "pt"):
            least, most = ASKED_SENTENCES["language"]
            prompts = [_prompt(language, "language", f"n{i}") for i in range(6)]
            counts = [_sentences(client, p, language) for p in prompts]
            assert all(least <= n <= most for n in counts), (language, counts)
