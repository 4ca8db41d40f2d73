"""t3rl's CLI driven in this process (Typer's CliRunner), for tests of what a command answers."""

from __future__ import annotations

import re

from click.testing import Result
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.fix_applier import apply_first_fix

# One warning of `t3rl validate`'s answer: its key, message, where it was set and its fix.
_WARNING = r"^warning (?P<key>.*?): (?P<message>.*?)\n\s+set in: (?P<source>.*?)\n\s+fix: (?P<fix>.*?)$"


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


def warnings_of(output: str) -> list[dict[str, str]]:
    """Each warning block of a command's answer (key, message, source, fix)."""
    return [m.groupdict() for m in re.finditer(_WARNING, output, re.M)]


def warned_with_a_fix_that_clears_it(argv: list[str], key: str, message: str) -> None:
    """`t3rl validate ARGV` accepts the config with one warning on `key` saying `message`; its first fix,
    applied as the user would, validates without that warning."""
    out = invoke(["validate", *argv], COLUMNS="400").output
    blocks = [b for b in warnings_of(out) if b["key"] == key]
    assert len(blocks) == 1 and message in blocks[0]["message"], out
    fixed = apply_first_fix(argv, blocks[0])
    assert fixed is not None, blocks[0]["fix"]
    result = invoke(["validate", *fixed], COLUMNS="400")
    assert result.exit_code == 0 and f"warning {key}:" not in result.output, result.output
