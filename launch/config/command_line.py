"""The options of the command being run, for reading its overrides: an unknown `--option` reaches the
overrides of `run`, `plan` and `validate`, and one close to an option of the command is that option
misspelt (`--run_dir` → `--run-dir`) rather than a config key. The CLI sets them; a small module of
its own, so that setting them costs a command nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from types import MappingProxyType

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
# `t3rl`'s commands (each with whether it composes a config from overrides alone: launch.cli.lazy's
# Subcommand.overrides), the one being run, and the word for help: typed among a command's overrides
# (`t3rl validate … help`, `… plan`), one is that command or its help, not a value the shell split off the
# override before it. The CLI sets the first two.
COMMANDS: ContextVar[Mapping[str, bool]] = ContextVar("commands", default=MappingProxyType({}))
RUNNING: ContextVar[str] = ContextVar("running", default="")
HELP_WORDS = ("help",)
