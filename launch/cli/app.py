"""The `t3rl` command line: one Typer app, one module per command group under `launch.cli`.

Command modules import only light libraries at module level (typer, rich, pydantic); Hydra and
everything heavier is imported inside the command functions, so `t3rl --help` stays instant.
"""

from __future__ import annotations

import importlib

import typer

from launch.cli.help_format import plain_metavars

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
)


def _version(value: bool) -> None:
    if value:
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
    from launch.config.command_line import COMMAND_OPTIONS
    from launch.config.secrets import scrub_standard_streams

    # Whatever a command prints passes the secret scrubber last (values it remembered, URL passwords).
    scrub_standard_streams()
    # An unknown `--option` reaches the overrides of run, plan and validate: a misspelt option of the
    # command is told from a config key by these.
    command = ctx.command.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
    params = command.params if command is not None else []
    COMMAND_OPTIONS.set(tuple(o for param in params for o in param.opts if o.startswith("-")))


# Each module defines `register(app)`.
COMMAND_MODULES = (
    "launch.cli.run",
    "launch.cli.inspect",
    "launch.cli.runtime",
    "launch.cli.runs",
    "launch.cli.score",
    "launch.cli.check_template",
    "launch.cli.rollouts",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)
plain_metavars(app)  # `A B`, `--out DIR`, nothing after a flag (not Typer's `{a} {b}`, `<bool>`)

