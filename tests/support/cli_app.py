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


def fix_of(output: str) -> str:
    """The one `fix:` line of a command's answer, without its label."""
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("fix:")]
    assert len(lines) == 1, output
    return lines[0].removeprefix("fix:").strip()


def refused(argv: list[str]) -> str:
    """`t3rl validate ARGV`'s answer, which must be a config error (exit 2)."""
    result = invoke(["validate", *argv])
    assert result.exit_code == 2, result.output
    return result.output


def validates(argv: list[str]) -> None:
    """`t3rl validate ARGV` must accept the config."""
    result = invoke(["validate", *argv])
    assert result.exit_code == 0, result.output
