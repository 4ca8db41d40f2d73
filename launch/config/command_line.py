"""The options of the command being run, for reading its overrides: an unknown `--option` reaches the
overrides of `run`, `plan` and `validate`, and one close to an option of the command is that option
misspelt (`--run_dir` → `--run-dir`) rather than a config key. The CLI sets them; a small module of
its own, so that setting them costs a command nothing."""

from __future__ import annotations

from contextvars import ContextVar

COMMAND_OPTIONS: ContextVar[tuple[str, ...]] = ContextVar("command_options", default=())
