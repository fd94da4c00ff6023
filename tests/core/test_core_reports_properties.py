"""Properties of reports (issue 35) over any sequence of rounds, focused checks and clock moves:
a focused check is judged as a round (the positive controls, the model-wide rule) and decided by
the same rules, counting only its confirmed failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from core_builders import MODEL, T0, cr, listing, quarantine_entries
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples

from canary.core.model import (
    Contract,
    EndpointState,
    Look,
    LookKind,
    Mode,
    Result,
)
from canary.core.policy import PolicyRules
from canary.core.quarantine import QuarantineStart, decide_model
from canary.core.reports import failures_only
from canary.core.verdict import judge_round

TAGS = ("a", "b", "c", "d", "e")
CONTRACTS = (Contract.schema, Contract.hygiene)
GAP = timedelta(minutes=10)

# one step: (round or focused, minutes since the last step, each tag's result per contract)
outcome = st.sampled_from([Result.passed, Result.passed, Result.fail, Result.inconclusive])
results = st.fixed_dictionaries({t: st.tuples(outcome, outcome) for t in TAGS})
steps = st.lists(
    st.tuples(st.booleans(), st.sampled_from([0, 1, 5, 9, 10, 11, 30, 90]), results), max_size=24
)


@dataclass
class Run:
    rules: PolicyRules
    floor: int = 2
    states: dict[str, EndpointState] = field(default_factory=dict)
    starts: list[QuarantineStart] = field(default_factory=list)
    now = T0
    ids = 0

    def look(self, focused: bool, given: Mapping[str, tuple[Result, Result]]) -> None:
        self.ids += 1
        kind = LookKind.focused if focused else LookKind.round
        look = Look(kind, self.ids, self.now)
        per_tag = {
            t: [cr(c, r) for c, r in zip(CONTRACTS, rs, strict=True)] for t, rs in given.items()
        }
        outcome = judge_round(MODEL, per_tag, positive_controls=(), rules=self.rules, look=look)
        verdicts = dict(outcome.verdicts)
        if focused:
            verdicts = {
                t: failures_only(v, {c.value for c in CONTRACTS}) for t, v in verdicts.items()
            }
        decision = decide_model(
            MODEL, self.states, verdicts, look=look, now=self.now, rules=self.rules,
            capacity_floor=self.floor, listing=listing(*TAGS),
            quarantines=quarantine_entries(self.states, self.now),
        )  # fmt: skip
        self.states = dict(decision.states)
        self.starts += decision.quarantines


def play(
    run: Run, sequence: Sequence[tuple[bool, int, Mapping[str, tuple[Result, Result]]]]
) -> Run:
    for focused, minutes, seen in sequence:
        run.now += timedelta(minutes=minutes)
        run.look(focused, seen)
    return run


@settings(max_examples=examples(200), deadline=None)
@given(steps)
def test_no_quarantine_rests_on_fewer_than_two_looks_or_two_looks_closer_than_the_gap(
    sequence: list[tuple[bool, int, dict[str, tuple[Result, Result]]]],
) -> None:
    run = play(Run(PolicyRules(mode=Mode.enforce, min_look_gap_minutes=10)), sequence)
    for start in run.starts:
        for _cause, looks in start.by_cause:
            counted = looks[-2:]
            assert len(counted) == 2
            assert all(b.at - a.at >= GAP for a, b in zip(counted, counted[1:], strict=False))  # type: ignore[operator]


@settings(max_examples=examples(200), deadline=None)
@given(steps, st.lists(st.tuples(st.integers(0, 23), st.sampled_from([0, 1, 4])), max_size=12))
def test_focused_checks_of_clean_endpoints_change_no_decision(
    sequence: list[tuple[bool, int, dict[str, tuple[Result, Result]]]],
    inserted: list[tuple[int, int]],
) -> None:
    """Reports against endpoints that answer cleanly: focused checks that pass. Interleaved
    anywhere, they leave every quarantine as the rounds alone decide it (none when the rounds
    pass too), so reports can neither bring a quarantine nor delay one."""
    rounds = [(False, m, g) for _, m, g in sequence]
    clean = {t: (Result.passed, Result.passed) for t in TAGS}
    mixed: list[tuple[bool, int, Mapping[str, tuple[Result, Result]]]] = []
    for i, step in enumerate(rounds):
        for at, minutes in inserted:
            if at == i and minutes <= step[1]:
                mixed.append((True, minutes, clean))
                step = (step[0], step[1] - minutes, step[2])
        mixed.append(step)
    rules = PolicyRules(mode=Mode.enforce, min_look_gap_minutes=10)
    alone, with_reports = play(Run(rules), rounds), play(Run(rules), mixed)
    assert [(q.tag, q.since) for q in with_reports.starts] == [
        (q.tag, q.since) for q in alone.starts
    ]
    all_clean = play(Run(rules), [(f, m, clean) for f, m, _ in mixed])
    assert all_clean.starts == []


@settings(max_examples=examples(150), deadline=None)
@given(steps)
def test_reports_never_bypass_observe_mode_the_floor_or_the_model_wide_rule(
    sequence: list[tuple[bool, int, dict[str, tuple[Result, Result]]]],
) -> None:
    observed = play(Run(PolicyRules(mode=Mode.observe)), sequence)
    assert not any(s.quarantined(observed.now) for s in observed.states.values())
    held = play(Run(PolicyRules(mode=Mode.enforce), floor=len(TAGS)), sequence)
    assert held.starts == []
    everyone = {t: (Result.fail, Result.fail) for t in TAGS}  # the model, not a host
    wide = play(Run(PolicyRules(mode=Mode.enforce)), [(f, m, everyone) for f, m, _ in sequence])
    assert wide.starts == []
