"""The equality check's prompts (``probes/equality.yaml``): story openings sampled at
temperature 1 and known-answer items at temperature 0, read into frozen models, with the request
bodies they become and the planned completions per endpoint."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import Field, JsonValue

from canary.config.definitions import Strict, parse_definition
from canary.core.equality import Sampled

EQUALITY_FILE = "equality.yaml"


class StoryPrompt(Strict):
    id: str = Field(min_length=1)
    opening: str = Field(min_length=1)


class KnownItem(Strict):
    id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class EqualityPrompts(Strict):
    system: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    samples: int = Field(default=10, ge=2, le=100)
    max_tokens: int = Field(default=48, ge=8, le=400)
    prompts: tuple[StoryPrompt, ...] = Field(min_length=1)
    known: tuple[KnownItem, ...] = ()

    @property
    def planned(self) -> int:
        """The story completions asked of each endpoint."""
        return len(self.prompts) * self.samples

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode("utf-8")).hexdigest()

    def story(self, prompt: StoryPrompt) -> str:
        return f"{self.instruction}\n{prompt.opening}"

    def body(self, user: str, *, temperature: float, max_tokens: int) -> dict[str, JsonValue]:
        """A chat request body (the client adds the model and the pinning)."""
        return {
            "messages": [
                {"role": "system", "content": self.system},
                {"role": "user", "content": user},
            ],
            "temperature": temperature,
            "max_tokens": max_tokens,
        }

    def sampled(
        self,
        tag: str,
        stories: dict[str, list[str]],
        known: dict[str, str],
        *,
        pooled: bool = True,
    ) -> Sampled:
        """An endpoint's answers, the known items scored (exact, after trimming)."""
        right = sum(known.get(k.id, "").strip() == k.answer for k in self.known)
        return Sampled(tag, stories, right, sum(k.id in known for k in self.known), pooled)


def load_equality_prompts(directory: Path) -> EqualityPrompts:
    return parse_definition(directory, EQUALITY_FILE, EqualityPrompts)
