"""The options of the command being run, for reading its overrides: an unknown `--option` reaches the
overrides of `run`, `plan` and `validate`, and one close to an option of the command is that option
misspelt (`--run_dir` → `--run-dir`) rather than a config key. The CLI sets them; a small module of
its own, so that setting them costs a command nothing."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

COMMAND_OPTIONS: ContextVar[tuple[str, ...]] = ContextVar("command_options", default=())
# The other commands that have an option (`--only`: run, plan), for one typed to a command without it
# (`t3rl validate --only train`): the CLI sets a function, called only then (it loads those commands).
COMMANDS_WITH: ContextVar[Callable[[str], list[str]] | None] = ContextVar("commands_with", default=None)
