"""`python -m canary`: the `canary` command, for an environment whose scripts are not on PATH."""

from canary.cli import run

run()
