"""The live, mutable state of a running simulator: endpoints, faults, RNG counters, request log.

Mutations come from the control API or from the test thread (`SimState.apply`) while the server
thread reads: every change swaps in a new providers mapping under a lock (copy on write).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from canary.sim.scenario import (
    Fault,
    ModelSpec,
    Provider,
    ProviderPatch,
    Scenario,
    ScenarioError,
    ServedBy,
    TimelineEntry,
    load_scenario,
    parse,
    parse_faults,
)
from canary.sim.text import TextBank, text_bank


class UnknownModel(LookupError):
    def __init__(self, model: str) -> None:
        super().__init__(f"unknown model {model!r}")
        self.model = model


class UnknownProvider(LookupError):
    def __init__(self, model: str, tag: str) -> None:
        super().__init__(f"model {model!r} has no provider {tag!r}")
        self.model = model
        self.tag = tag


@dataclass(frozen=True)
class ModelState:
    spec: ModelSpec  # id, name, description, created (its providers are not used)
    providers: dict[str, Provider]  # tag -> provider, in scenario order; replaced, never mutated


class SimState:
    """What the simulator serves now. Safe to change from another thread."""

    def __init__(self, scenario: Scenario | Mapping[str, JsonValue] | Path | str) -> None:
        self.scenario = load_scenario(scenario)
        self.bank: TextBank = text_bank(self.scenario.text_bank)
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self.models: dict[str, ModelState] = {}
        self._counters: dict[tuple[str, str], int] = {}
        self._log: list[dict[str, JsonValue]] = []
        self._generations: dict[str, dict[str, JsonValue]] = {}  # id -> its answer's log entry
        self.generation_lag_s = 1.0  # how long after an answer ends GET /generation knows it
        self.reset()

    # ---- reading -------------------------------------------------------------------------
    @property
    def seed(self) -> int:
        return self.scenario.seed

    @property
    def api_key(self) -> str | None:
        return self.scenario.api_key

    def model(self, model: str) -> ModelState:
        try:
            return self.models[model]
        except KeyError:
            raise UnknownModel(model) from None

    def provider(self, model: str, tag: str) -> Provider:
        try:
            return self.model(model).providers[tag]
        except KeyError:
            raise UnknownProvider(model, tag) from None

    def faults(self, model: str, tag: str) -> tuple[Fault, ...]:
        return self.provider(model, tag).faults

    def rng(self, model: str, tag: str) -> random.Random:
        """A fresh RNG for the next request to (model, tag): seed + per-endpoint counter."""
        with self._lock:
            n = self._counters.get((model, tag), 0)
            self._counters[(model, tag)] = n + 1
        return random.Random(f"{self.seed}:{model}:{tag}:{n}")

    def snapshot(self) -> dict[str, JsonValue]:
        return {
            "seed": self.seed,
            "models": [
                {
                    "id": m.spec.id,
                    "name": m.spec.name,
                    "providers": [p.model_dump(mode="json") for p in m.providers.values()],
                }
                for m in self.models.values()
            ],
        }

    # ---- request log ---------------------------------------------------------------------
    def record(self, entry: dict[str, JsonValue]) -> None:
        with self._lock:
            entry["seq"] = len(self._log)
            self._log.append(entry)
            if isinstance(entry.get("id"), str):
                self._generations[str(entry["id"])] = entry

    def generation(self, gen_id: str) -> dict[str, JsonValue] | None:
        """The log entry of the answer ``gen_id`` names (what ``GET /generation`` reports)."""
        with self._lock:
            found = self._generations.get(gen_id)
            return None if found is None else dict(found)

    def requests(self) -> list[JsonValue]:
        with self._lock:
            return [dict(e) for e in self._log]

    def clear_requests(self) -> None:
        with self._lock:
            self._log = []
            self._generations = {}

    # ---- changing ------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the scenario as loaded: endpoints, faults, counters and log."""
        with self._lock:
            self.models = {
                m.id: ModelState(spec=m, providers={p.tag: p for p in m.providers})
                for m in self.scenario.models
            }
            self._counters = {}
            self._log = []

    def _replace(self, model: str, providers: dict[str, Provider]) -> None:
        current = self.model(model)
        self.models = {**self.models, model: ModelState(current.spec, providers)}

    def set_faults(self, model: str, tag: str, faults: Sequence[Fault | JsonValue]) -> None:
        parsed = parse_faults(faults)
        with self._lock:
            provider = self.provider(model, tag)
            providers = dict(self.model(model).providers)
            providers[tag] = provider.model_copy(update={"faults": parsed})
            self._check_served_by(model, providers)
            self._replace(model, providers)

    def update(self, model: str, tag: str, patch: ProviderPatch | dict[str, JsonValue]) -> Provider:
        if isinstance(patch, dict):
            patch = parse(ProviderPatch, patch, "set")
        changes = patch.model_dump(exclude_none=True)
        if patch.price is not None:
            changes["price"] = patch.price
        with self._lock:
            provider = self.provider(model, tag)
            data = provider.model_dump()
            data.update(changes)
            updated: Provider = parse(Provider, data, f"{model} {tag}")
            providers = dict(self.model(model).providers)
            providers[tag] = updated
            self._replace(model, providers)
        return updated

    def remove(self, model: str, tag: str) -> None:
        with self._lock:
            self.provider(model, tag)
            providers = {t: p for t, p in self.model(model).providers.items() if t != tag}
            self._replace(model, providers)

    def add(self, model: str, provider: Provider | dict[str, JsonValue]) -> Provider:
        if isinstance(provider, dict):
            provider = parse(Provider, provider, "add")
        with self._lock:
            providers = dict(self.model(model).providers)
            if provider.tag in providers:
                raise ScenarioError(f"add: model {model!r} already has provider {provider.tag!r}")
            providers[provider.tag] = provider
            self._check_served_by(model, providers)
            self._replace(model, providers)
        return provider

    def _check_served_by(self, model: str, providers: dict[str, Provider]) -> None:
        for p in providers.values():
            for f in p.faults:
                if isinstance(f, ServedBy) and f.tag not in providers:
                    raise ScenarioError(f"served_by.tag {f.tag!r} is not a provider of {model}")

    def apply(self, entry: TimelineEntry | JsonValue) -> TimelineEntry:
        """Apply one timeline entry now (its `round` is ignored here)."""
        if not isinstance(entry, TimelineEntry):
            if not isinstance(entry, dict):
                raise ScenarioError("entry: expected an object")
            entry = parse(TimelineEntry, {"round": 0, **entry}, "entry")
        self.model(entry.model)
        if entry.faults is not None:
            assert entry.provider is not None
            self.set_faults(entry.model, entry.provider, list(entry.faults))
        elif entry.set is not None:
            assert entry.provider is not None
            self.update(entry.model, entry.provider, entry.set)
        elif entry.remove:
            assert entry.provider is not None
            self.remove(entry.model, entry.provider)
        elif entry.add is not None:
            self.add(entry.model, entry.add)
        return entry

    def apply_round(self, round_no: int) -> list[TimelineEntry]:
        """Apply the scenario's timeline entries for round `round_no`, in file order."""
        entries = [e for e in self.scenario.timeline if e.round == round_no]
        for entry in entries:
            self.apply(entry)
        return entries
