"""The subcommands of `t3rl`, each defined in its own module and imported only when it runs.

`t3rl --help` lists them from the table below (name, module, the first paragraph of its help), so it
imports no command module; resolving a command (running it, its own `--help`, completing its
arguments) imports its module, whose `register(app)` defines it on a Typer app. Command modules can
therefore import what they use at their top: only their own command pays for it.
`tests/launch/test_lazy_cli.py` checks that the listed help is each command's own.
"""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand

from launch.cli.failures import exit_code_for, mend_surroundings, sigterm_as_interrupt
from launch.cli.help_format import ARGV_KEY, PlainGroup, plain_metavars


@dataclass(frozen=True)
class Subcommand:
    # The module whose `register(app)` defines the command.
    module: str
    # The first paragraph of its help, line breaks kept (what `t3rl --help` shows next to its name).
    help: str
    # Whether it composes a config from overrides alone (`t3rl plan OVERRIDES…`): a line of another such
    # command's overrides runs as typed with it.
    overrides: bool = False


# Typer's completion options, by their parameter names, with the help of the SHELL they take
# (launch.cli.completion_shells reads it after them).
COMPLETION_HELP = {
    "install_completion": (
        "Install completion for SHELL, by default the shell you are in (one without a completion script "
        "is refused, naming those with one). Restart the shell afterwards."
    ),
    "show_completion": "Print the completion script for SHELL (as --install-completion), to install by hand.",
}

# In the order `t3rl --help` lists them.
SUBCOMMANDS = {
    "run": Subcommand(
        "launch.cli.run",
        "Run the staged pipeline of an experiment (resumable: finished, unchanged stages are skipped).",
        overrides=True,
    ),
    "plan": Subcommand(
        "launch.cli.run",
        "Show every stage and its exact commands, and write them to a plan dir with plan.sh; run nothing.",
        overrides=True,
    ),
    "validate": Subcommand(
        "launch.cli.inspect",
        "Check a config (schema, topology, batch sizes, parsers, checkpoint, stages); exit 2 on errors.",
        overrides=True,
    ),
    "show": Subcommand(
        "launch.cli.inspect",
        "Print the resolved config, or with --explain where each value came from.",
        overrides=True,
    ),
    "ls": Subcommand(
        "launch.cli.inspect",
        "List config groups and their options (* = the default), with each file's description.",
    ),
    "eval": Subcommand(
        "launch.cli.runtime",
        "Evaluate a model (or the scripted reference policy) on a prepared split, here and now.",
        overrides=True,
    ),
    "score": Subcommand(
        "launch.cli.score",
        "Score a JSONL of trajectories with the worlds' own checkers; writes verdicts.jsonl + summary.json.",
    ),
    "check-template": Subcommand(
        "launch.cli.check_template",
        "Render, tokenize, check TITO deltas against a fresh render, and read the template's own tool calls "
        "(and reasoning) back with the model's SGLang parsers; exit 1 when a check fails.",
    ),
    "data": Subcommand(
        "launch.cli.runtime", "Prepare a dataset: one JSONL file per split plus manifest.json."
    ),
    "runs": Subcommand("launch.cli.runs", "List run directories and their stages' status."),
    "rollouts": Subcommand("launch.cli.rollouts", "Inspect slime's saved rollouts on CPU."),
}


class LazyGroup(PlainGroup):
    """The `t3rl` group: lists SUBCOMMANDS without importing them, imports one when it is resolved."""

    def __init__(self, **kwargs: Any) -> None:
        self._listing = False
        super().__init__(**kwargs)

    @property  # type: ignore[override]
    def commands(self) -> MutableMapping[str, Any]:
        """Every command, each module imported (for code that walks the whole tree: docs, tests)."""
        for name in SUBCOMMANDS:
            self._resolve(name)
        return self._loaded

    @commands.setter
    def commands(self, value: MutableMapping[str, Any]) -> None:
        self._loaded = dict(value)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*SUBCOMMANDS, *(name for name in self._loaded if name not in SUBCOMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self._loaded or cmd_name not in SUBCOMMANDS:
            return self._loaded.get(cmd_name)
        if self._listing:  # listed in this group's help: its name and help suffice
            return TyperCommand(name=cmd_name, help=SUBCOMMANDS[cmd_name].help)
        return self._resolve(cmd_name)

    def invoke(self, ctx: Any) -> Any:
        """Every command ends as `launch.cli.failures` says: a known kind of failure is one line and its
        exit code, SIGTERM stops it as Ctrl-C does."""
        mend_surroundings()  # again: in-process callers (tests, CliRunner) skip `launch.cli.main`
        with sigterm_as_interrupt():
            try:
                return super().invoke(ctx)
            except (Exception, KeyboardInterrupt) as error:
                code = exit_code_for(error, ctx.invoked_subcommand)
                if code is None:
                    raise
                raise typer.Exit(code) from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """A command given after its own options or overrides (`t3rl +experiment=x validate`): refused
        with the line that works (Click named the first argument as an unknown command or option)."""
        # The command line as typed after `t3rl`: a stopped command's resume line repeats it whole.
        ctx.meta.setdefault(ARGV_KEY, list(args))
        first = args[0].partition("=")[0] if args else ""
        if not ctx.resilient_parsing and any(
            first in p.opts and p.name in COMPLETION_HELP for p in self.params
        ):
            from launch.cli.completion_shells import completion_request  # lazy: only to complete

            completion_request(args, ctx)  # the SHELL named after the option, which Typer's flag ignored
        if not ctx.resilient_parsing and not all(arg.isascii() and arg.isprintable() for arg in args):
            from launch.cli.pasted_characters import pasted_refusal  # lazy: only a line of other text

            pasted = pasted_refusal(args)
            if pasted is not None:
                from launch.config.errors import ConfigError  # lazy: only for a line to refuse

                raise typer.Exit(exit_code_for(ConfigError([pasted])))
        own = [name for param in self.params for name in (*param.opts, *param.secondary_opts)]
        own += ctx.help_option_names
        if first and first not in SUBCOMMANDS and first not in own and not ctx.resilient_parsing:
            from launch.cli.misplaced import misplaced  # lazy: only when the command is not first

            wrong = misplaced(args, SUBCOMMANDS, own)
            if wrong is not None:
                raise typer.BadParameter(wrong, ctx, param_hint="COMMAND")
        return super().parse_args(ctx, args)

    def get_params(self, ctx: Any) -> list[Any]:
        """Typer's completion options, with the help of the SHELL they take (launch.cli.completion_shells)."""
        params = super().get_params(ctx)
        for param in params:
            param.help = COMPLETION_HELP.get(param.name, param.help)
        return params

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def _resolve(self, name: str) -> Any:
        if name not in self._loaded:
            self._loaded.update(_commands_of(SUBCOMMANDS[name].module, self.rich_markup_mode))
        return self._loaded.get(name)


# The commands a module defines, built once a process: Typer builds each Click command from its
# function's signature (~3 ms a module), and an in-process caller (a test, CliRunner) makes a new group
# for every command line. A command is the same for every invocation: its function reads the module's
# names when it runs, and Click keeps what one invocation parsed in its context, not in the command.
_BUILT: dict[tuple[str, Any], dict[str, Any]] = {}


def _commands_of(module: str, rich_markup_mode: Any) -> dict[str, Any]:
    key = (module, rich_markup_mode)
    if key not in _BUILT:
        sub = typer.Typer(rich_markup_mode=rich_markup_mode)
        importlib.import_module(module).register(sub)
        plain_metavars(sub)
        _BUILT[key] = dict(typer.main.get_group(sub).commands)
    return _BUILT[key]
