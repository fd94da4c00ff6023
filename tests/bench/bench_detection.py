"""Detection power: how often one round catches each degradation, and how often it fails a
healthy endpoint, end to end.

    .venv/bin/python tests/bench/bench_detection.py [--quick] [--tune-seeds 1,2]
        [--report-seeds 3,4,5,6] [--rounds 42] [--timing-rounds 3] [--fault-rounds 1]
        [--only tune|report|fleet|faults]

Each seed starts `canary sim` (a separate process) whose text_bank is the shared corpus
(../shared/corpus/lingua-sentences) when it is there, the built-in bank otherwise, and sends real
rounds to it through the real OpenRouterClient and the real Prober: the planned probes, then the
re-checks the core asks for. Streams run at ordinary speeds: first token after 300-900 ms (plus
up to 300 ms of jitter), 20-100 tokens/s, one chunk per token. The settings are the defaults
(ttft_threshold_s 10, first_token_timeout_s 30, stream_timeout_s 60, 3 ttft samples,
max_tokens 400), every endpoint advertises every contract, and each endpoint-round is in one of
the 17 languages (rotating; the mixing rows stay in pt or uk, the drift rows skip the language
they drift to).

1. Tuning, on the tune seeds only: the hygiene share (the unclean share of a round's prose answers
   that fails the first look). Clean endpoints and endpoints with garbage_prefix at 0.5, 0.8 and
   0.95 are probed, and every endpoint-round gets two language re-checks whatever its first look
   said, so each candidate share is judged exactly, first look and confirmation, on the same
   answers. Chosen: the share with the most detection at rate 0.5 among those whose false
   failures stay at or under half the target (0.05 %) and that catch at least 99 % at 0.95 (the
   highest such share on a tie).
2. Report, on the report seeds, with the rules as the code has them (the tuned share is only
   compared with the production constant):
   a. the clean fleet: false failures per contract;
   b. every fault kind at several rates: the share of endpoint-rounds failing the contract the
      fault breaks (and which other contracts failed with it);
   c. issue 13's two fleets: 12 pt endpoints mixing es and 12 uk endpoints mixing ru, share 0.34,
      beside 16 clean ones, one round each; garbage_prefix at 0.95;
   d. the timing faults (first token after 12 s, a stall before the first token, the sporadic
      fleet) in rounds of their own, since each waits up to 2 x 30 s;
   e. the faults that break no contract (``--only faults`` runs them alone, in a few minutes):
      the transport faults (http_error 503 and 429, disconnect, midstream_error, a stall after
      the first tokens), each alone, whose expected outcome is no quality failure (the share
      shown is the false-failure share); served_by (every probe invalid, no contract failure);
      served_model (no contract failure: drift is recorded elsewhere); reasoning_first (ttft
      times the first content token, the reasoning delta only keeps an open stream from counting
      as a stall: 0.5 s of thinking passes, 12 s of thinking fails ttft).

Every fault kind of the simulator (canary/sim/scenario.py ``FaultKind``) has a row: the script
refuses to start when one is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import secrets
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sim import SimProcess, load_average  # noqa: E402

from canary.config.probe_set import ProbeSet, load_probes  # noqa: E402
from canary.config.settings import PROJECT_ROOT, SUPPORTED_LANGUAGES, Settings  # noqa: E402
from canary.core.contracts.confirm import confirm  # noqa: E402
from canary.core.contracts.evidence import is_prose_answer, prose_answers  # noqa: E402
from canary.core.contracts.hygiene import SHARE, hygiene_look, judge_hygiene  # noqa: E402
from canary.core.model import (  # noqa: E402
    Contract,
    ContractResult,
    Endpoint,
    EndpointState,
    Observation,
    Result,
)
from canary.openrouter.client import OpenRouterClient  # noqa: E402
from canary.rounds.prober import EndpointProbing, Prober  # noqa: E402
from canary.service.logs import configure_logging  # noqa: E402
from canary.sim.scenario import FaultKind  # noqa: E402
from canary.text.detect import LanguageAnalyzer  # noqa: E402

CORPUS = PROJECT_ROOT / ".." / "shared" / "corpus" / "lingua-sentences"
MODEL = "bench/detection"
PARAMETERS = ["max_tokens", "temperature", "response_format", "structured_outputs", "tools",
              "tool_choice"]  # fmt: skip
LANGUAGE_FP_TARGET = 0.005
HYGIENE_FP_TARGET = 0.001
SHARES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
ALL = tuple(SUPPORTED_LANGUAGES)


@dataclass(frozen=True)
class Row:
    """Endpoints with one set of faults, the contract they break, the languages they answer in."""

    name: str
    faults: tuple[dict[str, Any], ...]
    contract: Contract | None  # None: a clean or noisy fleet, nothing should fail
    endpoints: int
    languages: tuple[str, ...] = ALL
    rate: float | None = None
    expect: str = ""  # the outcome stated for a row that breaks no contract
    invalid: bool = False  # every probe is invalid (answered by another provider)

    @property
    def slug(self) -> str:
        return "".join(ch if ch.isalnum() else "-" for ch in self.name).strip("-").lower()


def fault(kind: str, rate: float, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "rate": rate, **params}


def but(*skip: str) -> tuple[str, ...]:
    return tuple(lang for lang in ALL if lang not in skip)


def judging_rows(scale: int) -> list[Row]:
    """Faults judged on content: rounds stay short."""
    rows = [
        Row(f"garbage_prefix {rate}", (fault("garbage_prefix", rate),), Contract.hygiene,
            3 * scale if rate == 0.95 else scale, rate=rate)
        for rate in (0.2, 0.5, 0.8, 0.95, 1.0)
    ]  # fmt: skip
    rows += [
        Row(f"repetition {rate}", (fault("repetition", rate),), Contract.hygiene, scale, rate=rate)
        for rate in (0.5, 1.0)
    ]
    rows += [
        Row(f"language_mix {lang}+{other} share {share}",
            (fault("language_mix", 1.0, share=share, **{"with": other}),), Contract.language,
            scale, (lang,), rate=1.0)
        for share in (0.2, 0.34)
        for lang, other in (("pt", "es"), ("uk", "ru"))
    ]  # fmt: skip
    rows += [
        Row(f"language_drift to en {rate}", (fault("language_drift", rate, to="en"),),
            Contract.language, scale, but("en"), rate=rate)
        for rate in (0.2, 0.5, 1.0)
    ]  # fmt: skip
    rows += [
        Row(f"mojibake {rate}", (fault("mojibake", rate),), Contract.language, scale, rate=rate)
        for rate in (0.3, 1.0)
    ]
    rows += [
        Row(f"{kind} {rate}", (fault(kind, rate),), Contract.refusal, scale, rate=rate)
        for kind in ("refusal", "content_filter", "empty", "truncate")
        for rate in (0.3, 1.0)
    ]
    rows += [
        Row(f"schema_break {how} {rate}", (fault("schema_break", rate, how=how),),
            Contract.schema, scale, rate=rate)
        for how in ("invalid_json", "missing_field", "prose")
        for rate in (0.05, 0.3, 1.0)
    ]  # fmt: skip
    rows += [
        Row(f"{kind} {rate}", (fault(kind, rate),), Contract.tools, scale, rate=rate)
        for kind in ("tool_no_call", "tool_unknown_name", "tool_invalid_json",
                     "tool_schema_mismatch")
        for rate in (0.05, 1.0)
    ]  # fmt: skip
    return rows


SPORADIC = (
    fault("http_error", 0.10, status=503),
    fault("slow_first_token", 0.03, ttft_ms=12000),
    fault("schema_break", 0.01, how="invalid_json"),
    fault("garbage_prefix", 0.02),
    fault("language_mix", 0.01, share=0.34, **{"with": "en"}),
    fault("disconnect", 0.02, after_tokens=3),
)


def timing_rows(scale: int) -> list[Row]:
    """Faults that cost time: their rounds wait up to two first-token timeouts."""
    slow = [
        Row(f"slow_first_token 12 s {rate}", (fault("slow_first_token", rate, ttft_ms=12000),),
            Contract.ttft, scale, rate=rate)
        for rate in (0.3, 0.6, 1.0)
    ]  # fmt: skip
    stall = [
        Row(f"stall before the first token {rate}", (fault("stall", rate, after_tokens=0),),
            Contract.ttft, scale, rate=rate)
        for rate in (0.3, 1.0)
    ]  # fmt: skip
    return [*slow, *stall, Row("sporadic fleet (issue 13)", SPORADIC, None, 2 * scale, but("en"))]


NO_QUALITY = "no quality failure (transport)"


def fault_rows(scale: int) -> list[Row]:
    """Faults that break no contract, each alone: what a round must make of them."""
    transport = [
        Row(f"http_error 503 {rate}", (fault("http_error", rate, status=503),), None, scale,
            rate=rate, expect=NO_QUALITY)
        for rate in (0.3, 1.0)
    ]  # fmt: skip
    transport.append(
        Row("http_error 429 1.0", (fault("http_error", 1.0, status=429),), None, scale, rate=1.0,
            expect=NO_QUALITY)
    )  # fmt: skip
    transport += [
        Row(f"{kind} after 3 tokens {rate}", (fault(kind, rate, after_tokens=3),), None, scale,
            rate=rate, expect=NO_QUALITY)
        for kind in ("disconnect", "midstream_error")
        for rate in (0.3, 1.0)
    ]  # fmt: skip
    # The first tokens arrived, then the stream went silent: not a ttft stall (a token came in
    # time) but an unfinished stream, cut at stream_timeout_s: a transport timeout.
    transport += [
        Row(f"stall after 3 tokens {rate}", (fault("stall", rate, after_tokens=3),), None, scale,
            rate=rate, expect=NO_QUALITY + ": timeout at stream_timeout_s")
        for rate in (0.3, 1.0)
    ]  # fmt: skip
    return [
        *transport,
        Row("served_by another endpoint 1.0", (fault("served_by", 1.0, tag=f"{CLEAN}-0"),), None,
            scale, rate=1.0, expect="invalid probe, no contract failure", invalid=True),
        Row("served_model other id 1.0", (fault("served_model", 1.0, id="other/model-9"),),
            None, scale, rate=1.0, expect="no contract failure (drift is recorded elsewhere)"),
        # ttft times the first *content* token; a reasoning delta only keeps an open stream from
        # counting as stalled. Thinking for 0.5 s is fast; thinking 12 s before writing is slow.
        Row("reasoning_first 500 ms 1.0", (fault("reasoning_first", 1.0, ms=500),), None, scale,
            rate=1.0, expect="no failure (ttft is the first content token, ~0.5 s later)"),
        Row("reasoning_first 12000 ms 1.0", (fault("reasoning_first", 1.0, ms=12000),),
            Contract.ttft, scale, rate=1.0,
            expect="ttft fails: content after 12 s; the reasoning delta is no stall either"),
    ]  # fmt: skip


CLEAN = "clean"


def clean_row(endpoints: int) -> Row:
    return Row(CLEAN, (), None, endpoints)


def mixing_fleet() -> list[Row]:
    """Issue 13's fleet: 12 pt endpoints mixing es, 12 uk mixing ru, 16 clean ones."""
    return [
        Row("pt+es 0.34 (fleet)", (fault("language_mix", 1.0, share=0.34, **{"with": "es"}),),
            Contract.language, 12, ("pt",), rate=1.0),
        Row("uk+ru 0.34 (fleet)", (fault("language_mix", 1.0, share=0.34, **{"with": "ru"}),),
            Contract.language, 12, ("uk",), rate=1.0),
        Row("clean (fleet)", (), None, 16),
    ]  # fmt: skip


# -- the simulator and the fleet ----------------------------------------------------------------


def tags_of(row: Row) -> list[str]:
    return [f"{row.slug}-{i}" for i in range(row.endpoints)]


def scenario(seed: int, rows: Sequence[Row], bank: Path | None) -> dict[str, Any]:
    rng = random.Random(seed)
    providers = [
        {
            "tag": tag,
            "name": tag,
            "supported_parameters": PARAMETERS,
            "ttft_ms": rng.randint(300, 900),
            "jitter_ms": 300,
            "tokens_per_second": rng.randint(20, 100),
            "faults": list(row.faults),
        }
        for row in rows
        for tag in tags_of(row)
    ]
    spec: dict[str, Any] = {"seed": seed, "models": [{"id": MODEL, "providers": providers}]}
    if bank is not None:
        spec["text_bank"] = str(bank.resolve())
    return spec


def _why_held(result: ContractResult) -> str:
    """Where a fault escaped: its flag was not confirmed, it was never flagged, or no verdict."""
    if result.result is Result.passed:
        confirmed = (result.detail or "").startswith("not confirmed")
        return "flagged, not confirmed" if confirmed else "never flagged"
    return result.result.value


@dataclass
class Tally:
    rounds: int = 0
    right: int = 0  # failed the contract the fault breaks
    failed: Counter[str] = field(default_factory=Counter)  # contract -> rounds it failed
    by_language: Counter[str] = field(default_factory=Counter)  # false failures, by language
    rechecked: int = 0  # rounds that sent re-checks
    example: str = ""
    missed: Counter[str] = field(default_factory=Counter)  # why the fault's contract held
    invalid: int = 0  # rounds whose every judged contract was an invalid probe
    transport: int = 0  # rounds with a transport_error result
    ttft: list[float] = field(default_factory=list)  # ttft figures (median first token, s)

    def add(self, row: Row, probing: EndpointProbing) -> None:
        self.rounds += 1
        failing = [r for r in probing.results if r.result is Result.fail]
        for r in failing:
            self.failed[r.contract.value] += 1
        if row.contract is not None and any(r.contract is row.contract for r in failing):
            self.right += 1
        elif row.contract is not None:
            judged = next(r for r in probing.results if r.contract is row.contract)
            self.missed[_why_held(judged)] += 1
            if not self.example:
                self.example = f"[{probing.language}] {judged.result.value}: {judged.detail[:160]}"
        if row.contract is None and failing:
            self.by_language[probing.language] += 1
            if not self.example:
                self.example = (
                    f"[{probing.language}] {failing[0].contract.value}: " + failing[0].detail[:160]
                )
        planned = 3 + 2 + 2  # ttft samples, refusal, language, schema, tools
        self.rechecked += len(probing.observations) > planned
        judged = [r for r in probing.results if r.result is not Result.not_applicable]
        self.invalid += bool(judged) and all(
            r.result is Result.inconclusive and r.reason == "attribution_mismatch" for r in judged
        )
        self.transport += any(r.result is Result.transport_error for r in judged)
        ttft = next((r for r in judged if r.contract is Contract.ttft), None)
        if ttft is not None and ttft.figure is not None:
            self.ttft.append(ttft.figure)


@dataclass
class Bench:
    probes: ProbeSet
    analyzer: LanguageAnalyzer
    settings: Settings

    def prober(self, client: OpenRouterClient) -> Prober:
        s = self.settings
        return Prober(
            client,
            self.probes,
            self.analyzer.analyze,
            languages=s.languages,
            ttft_threshold_s=s.ttft_threshold_s,
            ttft_samples=s.ttft_samples,
            max_tokens=s.openrouter.max_tokens,
            concurrency=256,  # the bench's fan-out; the default (32) only spreads it in time
            per_provider_concurrency=8,
        )

    def client(self, base_url: str) -> OpenRouterClient:
        o = self.settings.openrouter
        return OpenRouterClient(
            base_url,
            "bench-detection-key",
            connect_timeout_s=o.connect_timeout_s,
            first_token_timeout_s=o.first_token_timeout_s,
            stream_timeout_s=o.stream_timeout_s,
            max_connections=256,
        )

    async def rounds(
        self,
        base_url: str,
        rows: Sequence[Row],
        count: int,
        first_index: int = 0,
        extra_rechecks: bool = False,
    ) -> list[tuple[Row, EndpointProbing, list[Observation]]]:
        """`count` rounds over every endpoint of `rows`: (row, what it saw, extra re-checks)."""
        out: list[tuple[Row, EndpointProbing, list[Observation]]] = []
        async with self.client(base_url) as client:
            listed = {e.tag: e for e in await client.list_endpoints(MODEL)}
            prober = self.prober(client)
            fleet = [(row, listed[tag], i) for row in rows for i, tag in enumerate(tags_of(row))]
            for r in range(first_index, first_index + count):
                states = {
                    e.tag: EndpointState(
                        MODEL, e.tag, next_language=row.languages[(r + i) % len(row.languages)]
                    )
                    for row, e, i in fleet
                }
                probings = await prober.probe_endpoints([e for _, e, _ in fleet], states, r)
                extras: list[list[Observation]] = [[] for _ in probings]
                if extra_rechecks:
                    extras = list(
                        await asyncio.gather(
                            *(self._language_rechecks(client, p) for p in probings)
                        )
                    )
                out.extend(
                    (row, p, extra)
                    for (row, _, _), p, extra in zip(fleet, probings, extras, strict=True)
                )
        return out

    async def _language_rechecks(
        self, client: OpenRouterClient, probing: EndpointProbing
    ) -> list[Observation]:
        """Two language re-checks for a round that did not send them (tuning only)."""
        if any(o.contract is Contract.language and o.attempt > 1 for o in probing.observations):
            return []
        return list(
            await asyncio.gather(
                *(self._send(client, probing.endpoint, probing.language, a) for a in (2, 3))
            )
        )

    async def _send(
        self, client: OpenRouterClient, endpoint: Endpoint, language: str, attempt: int
    ) -> Observation:
        nonce = secrets.token_hex(6)
        request = self.probes.request(
            Contract.language, language, nonce, endpoint, self.settings.openrouter.max_tokens
        )
        return await client.probe(
            endpoint,
            request.body,
            contract=Contract.language,
            language=language,
            attempt=attempt,
            checksum=request.checksum,
            nonce=nonce,
        )


# -- tuning -------------------------------------------------------------------------------------


def hygiene_under(share: float, probing: EndpointProbing, extra: Sequence[Observation],
                  probes: ProbeSet) -> Result:  # fmt: skip
    """The hygiene result this endpoint-round would get with ``share``: first look over its
    planned probes, confirmed by its two language re-checks."""
    first = [o for o in probing.observations if not _is_recheck(o)]
    rechecks = [o for o in probing.observations if _is_recheck(o)] + list(extra)
    patterns = probes.refusal_patterns
    looked = judge_hygiene(prose_answers(first, patterns), first, share)
    language_rechecks = [o for o in rechecks if o.contract is Contract.language]
    looks = [hygiene_look(o, is_prose_answer(o, patterns)) for o in language_rechecks]
    return confirm(looked, looks).result


def _is_recheck(o: Observation) -> bool:
    planned = 3 if o.contract is Contract.ttft else 1
    return o.attempt > planned


def tune(bench: Bench, seeds: Sequence[int], rounds: int, clean: int, bank: Path | None) -> float:
    garbage = [
        Row(f"garbage_prefix {rate}", (fault("garbage_prefix", rate),), Contract.hygiene, 6,
            rate=rate)
        for rate in (0.5, 0.8, 0.95)
    ]  # fmt: skip
    rows = [clean_row(clean), *garbage]
    seen: list[tuple[Row, EndpointProbing, list[Observation]]] = []
    for seed in seeds:
        started = time.perf_counter()
        with SimProcess(scenario(seed, rows, bank)) as sim:
            seen += asyncio.run(bench.rounds(sim.base_url, rows, rounds, extra_rechecks=True))
        print(f"  tune seed {seed}: {rounds} rounds in {time.perf_counter() - started:.0f} s")
    print(f"\n{'share':>6}{'clean false fail':>20}" + "".join(f"{g.name:>22}" for g in garbage))
    best: tuple[float, float] | None = None
    for share in SHARES:
        results: dict[str, list[Result]] = defaultdict(list)
        for row, probing, extra in seen:
            results[row.name].append(hygiene_under(share, probing, extra, bench.probes))
        cells = {name: sum(r is Result.fail for r in rs) / len(rs) for name, rs in results.items()}
        n_clean = len(results["clean"])
        print(
            f"{share:>6.1f}{100 * cells['clean']:>12.3f} % of {n_clean:<5}"
            + "".join(f"{100 * cells[g.name]:>20.1f} %" for g in garbage)
        )
        if cells["clean"] <= HYGIENE_FP_TARGET / 2 and cells["garbage_prefix 0.95"] >= 0.99:
            score = cells["garbage_prefix 0.5"]
            if best is None or score >= best[1]:
                best = (share, score)
    if best is None:
        print("no share meets the targets on the tune seeds")
        return SHARE
    verdict = "the same" if abs(best[0] - SHARE) < 1e-9 else f"DIFFERENT (production: {SHARE})"
    print(f"tuned share: {best[0]} (most detection at 0.5 within the limits); production: "
          f"{verdict}")  # fmt: skip
    return best[0]


# -- report -------------------------------------------------------------------------------------


def run_phase(bench: Bench, seeds: Sequence[int], rows: Sequence[Row], rounds: int,
              bank: Path | None, label: str) -> dict[str, Tally]:  # fmt: skip
    tallies: dict[str, Tally] = defaultdict(Tally)
    for seed in seeds:
        started = time.perf_counter()
        with SimProcess(scenario(seed, rows, bank)) as sim:
            for row, probing, _ in asyncio.run(bench.rounds(sim.base_url, rows, rounds)):
                tallies[row.name].add(row, probing)
        took = time.perf_counter() - started
        print(f"  {label} seed {seed}: {rounds} round(s) in {took:.0f} s (load {load_average()})")
    return tallies


def print_rows(rows: Sequence[Row], tallies: dict[str, Tally]) -> None:
    print(f"\n{'fault':<44}{'contract':>9}{'endpoint-rounds':>16}{'fail it':>10}"
          f"{'re-checked':>11}  also failed")  # fmt: skip
    for row in rows:
        t = tallies[row.name]
        if not t.rounds:
            continue
        others = ", ".join(
            f"{c} {100 * n / t.rounds:.0f} %"
            for c, n in sorted(t.failed.items())
            if row.contract is None or c != row.contract.value
        )
        if row.contract is None:
            share = sum(t.by_language.values()) / t.rounds
            cell = f"{100 * share:.2f} %"
        else:
            cell = f"{100 * t.right / t.rounds:.1f} %"
        contract = row.contract.value if row.contract else "none"
        print(f"{row.name:<44}{contract:>9}{t.rounds:>16}{cell:>10}"
              f"{100 * t.rechecked / t.rounds:>10.0f}%  {others or '-'}")  # fmt: skip
        if t.example and (row.contract is None or t.right < t.rounds):
            print(f"{'':<6}e.g. {t.example}")


def print_fault_rows(rows: Sequence[Row], tallies: dict[str, Tally], threshold_s: float) -> None:
    """The rows that break no contract: the stated outcome, and whether it held."""
    print(f"\n{'fault':<34}{'endpoint-rounds':>16}{'fails':>11}{'transport':>10}"
          f"{'invalid':>8}{'ttft p50':>9}  expected -> held?")  # fmt: skip
    print(f"{'':<34}{'':>16}{'(false)':>11}")
    for row in rows:
        t = tallies[row.name]
        if not t.rounds:
            continue
        # a row with a contract: the share failing it; else the false-failure share
        false = t.right if row.contract is not None else sum(t.by_language.values())
        ttft = f"{statistics.median(t.ttft):.1f} s" if t.ttft else "-"
        if row.contract is not None:
            held = t.right == t.rounds
        else:
            held = false == 0 and (not row.invalid or t.invalid == t.rounds)
        if row.name.startswith("reasoning_first") and row.contract is None:
            held = held and bool(t.ttft) and statistics.median(t.ttft) <= threshold_s
        print(f"{row.name:<34}{t.rounds:>16}{100 * false / t.rounds:>10.1f}%"
              f"{100 * t.transport / t.rounds:>9.0f}%{100 * t.invalid / t.rounds:>7.0f}%"
              f"{ttft:>9}  {row.expect or 'no failure'} -> {'yes' if held else 'NO'}")  # fmt: skip
        if t.example and not held:
            print(f"{'':<6}e.g. {t.example}")


def check_every_kind_has_a_row(rows: Sequence[Row]) -> None:
    covered = {str(f["kind"]) for row in rows for f in row.faults}
    missing = sorted(set(FaultKind) - covered)
    if missing:
        raise SystemExit(f"bench_detection: no row for fault kind(s) {', '.join(missing)}")


def print_clean(tally: Tally) -> None:
    n = tally.rounds
    print(f"\nclean fleet, {n} endpoint-rounds in 17 languages: false failures per contract")
    for contract in Contract:
        k = tally.failed[contract.value]
        print(f"  {contract.value:<9}{k:>5}  {100 * k / max(1, n):.3f} %")
    print(f"  re-checks sent (a first look flagged something): {tally.rechecked} endpoint-rounds "
          f"({100 * tally.rechecked / max(1, n):.2f} %)")  # fmt: skip
    if tally.by_language:
        shown = ", ".join(f"{lang} {k}" for lang, k in tally.by_language.most_common())
        print(f"  endpoint-rounds with any false failure, by language: {shown}")
    language = tally.failed[Contract.language.value] / max(1, n)
    hygiene = tally.failed[Contract.hygiene.value] / max(1, n)
    print(f"  language {100 * language:.3f} % (target <= 0.5 % over >= 2,000): "
          f"{'OK' if language <= LANGUAGE_FP_TARGET and n >= 2000 else 'NOT MET'}")  # fmt: skip
    print(f"  hygiene  {100 * hygiene:.3f} % (target <= 0.1 % over >= 10,000): "
          f"{'OK' if hygiene <= HYGIENE_FP_TARGET and n >= 10000 else 'NOT MET'}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune-seeds", default="1,2")
    parser.add_argument("--report-seeds", default="3,4,5,6")
    parser.add_argument("--rounds", type=int, default=42, help="judging rounds per report seed")
    parser.add_argument("--tune-rounds", type=int, default=20)
    parser.add_argument("--timing-rounds", type=int, default=3)
    parser.add_argument("--fault-rounds", type=int, default=1,
                        help="rounds per report seed of the faults that break no contract")  # fmt: skip
    parser.add_argument("--clean", type=int, default=60, help="clean endpoints in each round")
    parser.add_argument("--scale", type=int, default=2, help="endpoints per fault row")
    parser.add_argument("--quick", action="store_true", help="a smoke run: a few rounds")
    parser.add_argument("--only", choices=("tune", "report", "fleet", "faults"),
                        help="one part alone")  # fmt: skip
    args = parser.parse_args()
    if args.quick:
        args.tune_seeds, args.report_seeds = "1", "3"
        args.rounds, args.tune_rounds, args.timing_rounds, args.clean = 3, 3, 1, 17
        args.fault_rounds = 1
    check_every_kind_has_a_row([*judging_rows(1), *timing_rows(1), *fault_rows(1), *mixing_fleet()])
    tune_seeds = [int(s) for s in args.tune_seeds.split(",") if s]
    report_seeds = [int(s) for s in args.report_seeds.split(",") if s]
    bank = CORPUS if CORPUS.is_dir() else None
    print(f"text bank: {'the shared corpus' if bank else 'the built-in bank (corpus not found)'}; "
          f"streams 20-100 tokens/s, first token 300-900 ms (+0-300 ms); load {load_average()}")  # fmt: skip
    settings = Settings()
    configure_logging(settings, level=logging.WARNING)  # transport errors are expected here
    analyzer = LanguageAnalyzer(SUPPORTED_LANGUAGES)
    analyzer.warm()
    bench = Bench(load_probes(settings.probes_dir, SUPPORTED_LANGUAGES), analyzer, settings)
    started = time.perf_counter()

    faults = [clean_row(args.scale), *fault_rows(args.scale)]
    if args.only == "faults":
        run_faults(bench, report_seeds, faults, args.fault_rounds, bank)
        print(f"\ntotal {time.perf_counter() - started:.0f} s; load {load_average()}")
        return 0

    if args.only in (None, "tune"):
        print(f"\n1. tuning the hygiene share on seeds {tune_seeds}")
        tune(bench, tune_seeds, args.tune_rounds, args.clean, bank)
    if args.only == "tune":
        return 0

    print(f"\n2. report on seeds {report_seeds} (hygiene share {SHARE}, as the code has it)")
    if args.only != "fleet":
        judging = [clean_row(args.clean), *judging_rows(args.scale)]
        tallies = run_phase(bench, report_seeds, judging, args.rounds, bank, "judging")
        print_clean(tallies["clean"])
        print_rows(judging[1:], tallies)
        garbage = tallies["garbage_prefix 0.95"]
        print(f"\ngarbage_prefix 0.95: {garbage.right}/{garbage.rounds} endpoint-rounds fail "
              f"hygiene ({100 * garbage.right / max(1, garbage.rounds):.1f} %, target >= 99 %)")  # fmt: skip

    fleet = mixing_fleet()
    print("\nissue 13's fleet (12 pt+es, 12 uk+ru at share 0.34, 16 clean), one round per seed")
    for seed in report_seeds:
        fleets = run_phase(bench, [seed], fleet, 1, bank, "mixing fleet")
        mixed = sum(fleets[r.name].right for r in fleet if r.contract)
        total = sum(fleets[r.name].rounds for r in fleet if r.contract)
        clean = fleets["clean (fleet)"]
        print(f"    seed {seed}: {mixed}/{total} mixing endpoints fail language (target: at "
              f"least 23 of 24); clean ones failing anything: "
              f"{sum(clean.by_language.values())}/{clean.rounds}")  # fmt: skip
        for r in fleet:
            if r.contract and fleets[r.name].right < fleets[r.name].rounds:
                missed = ", ".join(f"{n} {why}" for why, n in fleets[r.name].missed.most_common())
                print(f"      {r.name}: missed {missed}; e.g. {fleets[r.name].example}")
    if args.only == "fleet":
        return 0

    timing = timing_rows(args.scale * 3)
    slow = run_phase(bench, report_seeds, timing, args.timing_rounds, bank, "timing")
    print_rows(timing, slow)
    run_faults(bench, report_seeds, faults, args.fault_rounds, bank)
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load {load_average()}")
    return 0


def run_faults(
    bench: Bench, seeds: Sequence[int], rows: Sequence[Row], rounds: int, bank: Path | None
) -> None:
    print("\nfaults that break no contract (each alone; a stall after tokens waits "
          f"stream_timeout_s = {bench.settings.openrouter.stream_timeout_s:g} s)")  # fmt: skip
    tallies = run_phase(bench, seeds, rows, rounds, bank, "faults")
    print_fault_rows(rows, tallies, bench.settings.ttft_threshold_s)


if __name__ == "__main__":
    raise SystemExit(main())
