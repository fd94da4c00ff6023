"""RULES_REVISION follows the rule code: a hash of the rule modules' sources is pinned to it.

When a rule module changes, this test fails until RULES_REVISION (canary/core/policy.py) is
bumped, if the change can alter a verdict or a decision, and PINNED below is set to the new pair.
The line to paste is printed by the failure, and by

    .venv/bin/python tests/core/test_core_rules_revision.py
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from canary.core.policy import RULES_REVISION

PINNED = (9, "12575b120cbe1e3f700614467248a5747c4b6f3c278571c3dfa7cec8f7a80cbd")

REPO = Path(__file__).resolve().parents[2]
# The modules whose code decides verdicts and decisions (policy.py holds the revision itself).
RULE_MODULES = (
    "canary/core/contracts/*",
    "canary/core/alerts.py",
    "canary/core/budget.py",
    "canary/core/classify.py",
    "canary/core/controls.py",
    "canary/core/floor.py",
    "canary/core/identity.py",
    "canary/core/layers.py",
    "canary/core/needs.py",
    "canary/core/plan.py",
    "canary/core/quarantine.py",
    "canary/core/quarantine_events.py",
    "canary/core/reports.py",
    "canary/core/streaks.py",
    "canary/core/verdict.py",
    "canary/text/*",
)


def rule_sources() -> list[Path]:
    found = {
        path
        for pattern in RULE_MODULES
        for path in REPO.glob(pattern)
        if path.is_file() and path.suffix != ".pyc"
    }
    return sorted(found, key=lambda p: p.relative_to(REPO).as_posix())


def rules_digest() -> str:
    """SHA-256 over each rule module's path and contents (line endings normalised to LF), in
    sorted path order."""
    digest = hashlib.sha256()
    for path in rule_sources():
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\n")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n") + b"\0")
    return digest.hexdigest()


def pinned_line() -> str:
    return f'PINNED = ({RULES_REVISION}, "{rules_digest()}")'


def test_every_rule_module_pattern_names_a_file() -> None:
    for pattern in RULE_MODULES:
        assert any(p.is_file() for p in REPO.glob(pattern)), f"{pattern} names no file"


def test_the_rule_modules_are_pinned_to_the_rules_revision() -> None:
    revision, digest = PINNED
    here = Path(__file__).relative_to(REPO)
    if rules_digest() != digest:
        raise AssertionError(
            "the rule modules changed since RULES_REVISION was pinned to them: if the change can "
            "alter a verdict or a decision, bump RULES_REVISION in canary/core/policy.py (now "
            f"{RULES_REVISION}); then update the pinned hash, with this line in {here}:\n"
            f"    {pinned_line()}"
        )
    assert RULES_REVISION == revision, (
        f"RULES_REVISION is {RULES_REVISION} but {here} pins {revision} to these sources: "
        f"set\n    {pinned_line()}"
    )


if __name__ == "__main__":
    print(pinned_line())
