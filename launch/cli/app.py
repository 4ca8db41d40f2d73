"""The `t3rl` command line: one Typer app whose subcommands live one module per command group under
`launch.cli`, each imported only when its command runs (`launch.cli.lazy`), so `t3rl --help` imports
none of them.
"""

from __future__ import annotations

import typer

from launch.cli.lazy import SUBCOMMANDS, LazyGroup
from launch.config.command_line import (
    COMMAND_OPTIONS,
    COMMANDS,
    COMMANDS_WITH,
    HELP_OPTIONS,
    ROOT_OPTIONS,
    RUNNING,
)

app = typer.Typer(
    name="t3rl",
    help=(
        "Declarative experiments for multi-turn tool-use RL on slime.\n\n"
        "Compose config groups with Hydra overrides, validate them before any GPU is touched, and run "
        "the staged pipeline (data → conversion → training → conversion → eval) into a run directory.\n\n"
        "Examples:\n\n"
        "  t3rl run +experiment=quickstart                 # the CPU main job\n\n"
        "  t3rl plan +experiment=bfcl_env_tuning           # the GPU pipeline, every command\n\n"
        "  t3rl run -m +experiment=stage1_bfcl reward=progress,binary\n\n"
        "  t3rl show +experiment=stage1_bfcl --explain hardware.tensor_parallel\n\n"
        "  t3rl ls model\n\n"
        "  t3rl score bfcl trajectories.jsonl            # official verdicts of trajectories you have"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    # Plain metavars (`A B`, `--out DIR`) like every subcommand (`launch.cli.help_format`).
    cls=LazyGroup,
    # -h as most tools take it: `t3rl run -h` was read as an override `h` ("write it as an override
    # without dashes"). Every command's context inherits it.
    context_settings={"help_option_names": list(HELP_OPTIONS)},
)


def _version(value: bool) -> None:
    if value:
        # lazy: importlib.metadata, only for --version
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("t3rl")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        typer.echo(f"t3rl {number}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    show_version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print t3rl's version and exit."
    ),
) -> None:
    """Declarative experiments for multi-turn tool-use RL on slime."""
    # lazy: not for --help: the callback runs with a command
    from launch.config.secrets import scrub_standard_streams

    # Whatever a command prints passes the secret scrubber last (values it remembered, URL passwords).
    scrub_standard_streams()
    # An unknown `--option` reaches the overrides of run, plan and validate: a misspelt option of the
    # command is told from a config key by these.
    command = ctx.command.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
    params = command.params if command is not None else []
    COMMAND_OPTIONS.set(tuple(o for param in params for o in param.opts if o.startswith("-")))
    ROOT_OPTIONS.set(tuple(o for param in ctx.command.params for o in param.opts if o.startswith("-")))
    COMMANDS.set({name: command.overrides for name, command in SUBCOMMANDS.items()})
    RUNNING.set(ctx.invoked_subcommand or "")
    COMMANDS_WITH.set(lambda option: _commands_with(ctx, option))


def _commands_with(ctx: typer.Context, option: str) -> list[str]:
    """The commands other than the one run that have `option` (each command's module is imported: only
    for an option the command refused)."""
    group = ctx.command
    assert isinstance(group, typer.core.TyperGroup)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name) if name != ctx.invoked_subcommand else None
        if command is not None and any(option in param.opts for param in command.params):
            found.append(name)
    return found
