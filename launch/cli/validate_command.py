"""The body of `t3rl validate` (see `launch.cli.inspect` for the command line), free of Typer:
`launch.cli.main` calls it directly for a plain `t3rl validate OVERRIDES…`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, render_problems
from launch.config.pydantic_plugins import without_plugins
from launch.output import console, rich_of
from launch.run.exit_codes import EXIT_CONFIG

if TYPE_CHECKING:
    from rich.console import Console

    from launch.output.plain import PlainConsole

# Commands taking overrides hand an unknown `--option` to them, where it is read as the config key it
# names (`--lr=1` → the corrected override) instead of Typer's bare "No such option".
UNKNOWN_OPTIONS_AS_OVERRIDES = {"ignore_unknown_options": True}


def command_console(stderr: bool = False) -> Console | PlainConsole:
    """A console for command output (soft wrap: long lines are never cut, whatever the width); rich's on
    a terminal (launch.output)."""
    return console(stderr=stderr, highlight=False, soft_wrap=True)


def validate_command(
    overrides: list[str], config_dirs: list[str], *, multirun: bool = False, max_points: int | None = None
) -> int:
    try:
        if multirun:
            from launch.run.sweep_checks import validate_multirun  # lazy: the sweep modules, only with -m

            return validate_multirun(overrides, config_dirs, rich_of(command_console()), max_points)
        with without_plugins():
            resolved = resolve(overrides, config_dirs)
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], command_console(stderr=True))
        return EXIT_CONFIG
    out = command_console()
    run = resolved.run
    warnings = list(resolved.warnings)
    if not run.stages:  # a valid config, but `t3rl run` and `t3rl plan` refuse it
        # lazy: the run step's modules, only for a config without stages
        from launch.run.steps import no_stages_problem

        warnings.append(no_stages_problem(severity="warning", config_dirs=config_dirs))
    if warnings:
        render_problems(warnings, command_console(stderr=True))
    stages = " → ".join(f"{name} ({stage.kind})" for name, stage in run.stages.items()) or "no stages"
    # The config always names a hardware option; a plan of CPU stages alone never reads it.
    hardware = (
        run.hardware.name if resolved.gpu_stages or not run.stages else "none (every stage runs on the CPU)"
    )
    out.print(f"[green]valid[/]: {run.name} — model {run.model.name}, hardware {hardware}")
    out.print(f"  stages: {stages}")
    return 0
