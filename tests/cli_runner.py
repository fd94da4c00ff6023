"""typer's test runner, on a command tree built once per process.

``typer.testing.CliRunner.invoke`` builds the click command tree from the Typer app again on
every call (``typer.main.get_command``: 15-30 ms for canary's, most of a short command's run).
This runner builds it once per app and invokes that command in typer's own isolation, with the
same result; the tests use it as they would typer's.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import typer
import typer.main
import typer.testing
from typer.testing import Result

__all__ = ["CliRunner", "Result"]


@cache
def command_tree(app: typer.Typer) -> Any:
    """``app``'s click command, as typer builds it (typer documents ``get_command`` for this)."""
    return typer.main.get_command(app)


class CliRunner(typer.testing.CliRunner):
    def invoke(  # type: ignore[override]
        self,
        app: typer.Typer,
        args: str | Sequence[str] | None = None,
        input: bytes | str | None = None,
        env: Mapping[str, str | None] | None = None,
        catch_exceptions: bool = True,
        color: bool = False,
        **extra: Any,
    ) -> Result:
        cli = command_tree(app)
        if isinstance(args, str):
            args = shlex.split(args)
        prog_name = extra.pop("prog_name", None) or self.get_default_prog_name(cli)
        return_value: Any = None
        exception: BaseException | None = None
        exit_code = 0
        exc_info: Any = None
        with self.isolation(input=input, env=env, color=color) as (stdout, stderr, output):
            try:
                return_value = cli.main(args=args or (), prog_name=prog_name, **extra)
            except SystemExit as e:
                exc_info = sys.exc_info()
                code = 0 if e.code is None else e.code
                if code != 0:
                    exception = e
                if not isinstance(code, int):
                    sys.stdout.write(f"{code}\n")
                    code = 1
                exit_code = code
            except Exception as e:
                if not catch_exceptions:
                    raise
                exception, exit_code, exc_info = e, 1, sys.exc_info()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                out, err, both = stdout.getvalue(), stderr.getvalue(), output.getvalue()
        return Result(
            runner=self,
            stdout_bytes=out,
            stderr_bytes=err,
            output_bytes=both,
            return_value=return_value,
            exit_code=exit_code,
            exception=exception,
            exc_info=exc_info,
        )
