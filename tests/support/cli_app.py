"""t3rl's CLI driven in this process (Typer's CliRunner), for tests of what a command answers."""

from __future__ import annotations

from click.testing import Result
from typer.testing import CliRunner

from launch.cli.app import app


def invoke(argv: list[str], **env: str) -> Result:
    """`t3rl ARGV` at a wide terminal, `env` set; no command may end in an exception or a traceback."""
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200", **env})
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{result.output}"
    )
    assert "Traceback" not in result.output, result.output
    return result
