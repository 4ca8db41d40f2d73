"""The errors `resolve` refuses a command line with, and the command line its first fix makes: the two
steps of every "refused at its key, with a fix that validates" test of the pre-flight's rounds."""

from __future__ import annotations

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from tests.support.fix_applier import apply_first_fix


def errors(overrides: list[str], config_dirs: tuple[str, ...] = ()) -> list[Problem]:
    """The refusals (errors, not warnings) of the command line; [] when it validates."""
    try:
        resolve(overrides, config_dirs)
    except ConfigError as error:
        return [p for p in error.problems if p.severity == "error"]
    return []


def fixed(overrides: list[str], problem: Problem) -> list[str]:
    """The command line with `problem`'s first fix applied as the user would (it must be one to apply)."""
    result = apply_first_fix(
        overrides, {"message": problem.message, "source": problem.source, "fix": problem.fix}
    )
    assert result is not None, problem.fix
    return result
