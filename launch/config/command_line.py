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
# The options of `t3rl` itself (`--version`, the completion installers), for one typed after a command
# (`t3rl run --version`), which no command has.
ROOT_OPTIONS: ContextVar[tuple[str, ...]] = ContextVar("root_options", default=())
# Every command's help options (the app's context settings). A flag is `--help` misspelt (`--hlep`,
# `--Help`) only when nearer to it than difflib's usual 0.6, which a short key's flag reaches too (`--lr`).
HELP_OPTIONS = ("-h", "--help")
HELP_NEAR = 0.75
