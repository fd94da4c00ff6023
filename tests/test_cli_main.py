"""The entry point loads only the module of the command a command line names."""

from __future__ import annotations

import pytest

from canary.cli.main import COMMAND_MODULES, MODULE_OF_COMMAND, command_modules


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["status"], ("ops",)),
        (["--config", "canary.toml", "drill", "--scenario", "s.yaml"], ("rounds",)),
        (["quarantine", "list", "--json"], ("ops",)),
        (["db", "upgrade"], ("db",)),
        ([], COMMAND_MODULES),
        (["--help"], COMMAND_MODULES),
        (["status", "--help"], COMMAND_MODULES),
        (["status", "-h"], COMMAND_MODULES),
        (["no-such-command"], COMMAND_MODULES),
    ],
)
def test_a_command_line_loads_only_what_it_names(
    argv: list[str], expected: tuple[str, ...]
) -> None:
    assert command_modules(argv) == expected


def test_every_registered_command_is_mapped_to_its_module() -> None:
    from canary.cli.main import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(MODULE_OF_COMMAND)
