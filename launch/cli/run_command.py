"""The body of `t3rl run` and `t3rl plan` (see `launch.cli.run` for the command line), free of Typer:
`launch.cli.main` calls it directly for a plain `t3rl run|plan OVERRIDES…`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from launch.config.errors import ConfigError, render_problems
from launch.output import console as command_console
from launch.output import rich_of
from launch.output.markup import escape
from launch.run.exit_codes import EXIT_CONFIG, EXIT_FAILED, EXIT_STOPPED, INTERRUPTED
from launch.run.pipeline import PipelineError
from launch.run.point_result import record_result
from launch.run.rundir import RunDirError, prefetched_manifest_facts
from launch.run.single import RecordKept, run_single, unwritable_record
from launch.run.steps import t3rl_root


def run_command(
    overrides: list[str],
    multirun: bool,
    run_dir: str | None,
    from_stage: str | None,
    only: str | None,
    config_dirs: list[str],
    *,
    dry: bool,
    out: str | None = None,
    max_points: int | None = None,
) -> int:
    """The whole command; returns the exit code."""
    console = command_console(highlight=False)
    # `--config-dir=~/x` reaches us unexpanded (the shell expands ~ only at a word's start); run dirs
    # record absolute paths, so a resumed run or sweep point finds them from any directory.
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
    # The manifest's git state and platform string are computed meanwhile, on a thread.
    with prefetched_manifest_facts(t3rl_root()):
        # A SIGTERM stops stages like Ctrl-C does (launch.cli.failures.sigterm_as_interrupt, around every
        # command), so the state records it.
        try:
            if run_dir is not None and (Path(run_dir).expanduser() / "sweep.json").exists():
                return _resume_sweep(
                    Path(run_dir).expanduser(), overrides, from_stage, only, dry, rich_of(console)
                )
            if multirun:
                if run_dir is not None:
                    raise PipelineError(
                        f"-m starts a new sweep, which makes its own dir, and --run-dir {run_dir} is not a "
                        "sweep dir (no sweep.json): drop -m to resume that run, or --run-dir to start a sweep"
                    )
                if out is not None:
                    raise PipelineError(
                        "--out names one dir and -m plans a sweep, one dir per point: drop --out (the "
                        "sweep's dir goes under paths.plans_dir) or -m"
                    )
                # lazy: the sweep modules (Hydra's sweep parser), only with -m
                from launch.run.search import is_search

                if is_search(overrides):
                    # lazy: the sweep modules, only with -m
                    from launch.run.search_runs import run_search_trials

                    return run_search_trials(overrides, dirs, rich_of(console), dry=dry)
                from launch.run.sweep_runs import run_sweep  # lazy: the sweep modules, only with -m

                return run_sweep(
                    overrides,
                    dirs,
                    from_stage,
                    only,
                    dry=dry,
                    console=rich_of(console),
                    max_points=max_points,
                )
            path = Path(run_dir) if run_dir is not None else None
            out_path = Path(out) if out is not None else None
            # Taken now: a resume moves to the dir the run was started in (in_recorded_working_dir), and
            # a relative path read after it named another dir, so a point run alone was not recorded.
            point = Path(os.path.abspath(path.expanduser())) if path is not None else None
            code = run_single(overrides, dirs, path, from_stage, only, dry=dry, console=console, out=out_path)
            if point is not None and not dry and (point.resolve().parent / "sweep.json").is_file():
                # lazy: the sweep modules, only for a sweep point run on its own
                from launch.run.sweep_point_alone import record_in_sweep

                note = record_in_sweep(point, code)
                if note:
                    console.print(note, soft_wrap=True, markup=False)
            return code
        except ConfigError as error:
            render_problems([*error.problems, *error.warnings], command_console(stderr=True))
            record_result(EXIT_CONFIG, "; ".join(f"{p.key}: {p.message}" for p in error.problems))
            return EXIT_CONFIG
        except (PipelineError, RunDirError) as error:
            command_console(stderr=True).print(
                f"[red]error:[/] {escape(str(error))}", soft_wrap=True, highlight=False
            )
            record_result(EXIT_FAILED, str(error).splitlines()[0])
            return EXIT_FAILED
        except KeyboardInterrupt as stop:
            if dry:  # a plan runs nothing: what was stopped is its writing, and nothing of it is kept
                command_console(stderr=True).print(
                    "[yellow]stopped[/]: interrupted by Ctrl-C or SIGTERM before the plan was written: no "
                    "plan dir is left (one half written is removed); the same command writes it again",
                    soft_wrap=True,
                )
            elif isinstance(stop, RecordKept) or multirun or run_dir is not None:
                console.print("[yellow]stopped[/]: stages that were running are recorded as stopped.")
            else:  # a new run stopped before its record was whole: it was removed, no stage had started
                command_console(stderr=True).print(
                    "[yellow]stopped[/]: interrupted by Ctrl-C or SIGTERM before the run's record was "
                    "written: no run dir is left and no stage ran; the same command starts it again",
                    soft_wrap=True,
                )
            record_result(EXIT_STOPPED, INTERRUPTED)
            return EXIT_STOPPED
        except Exception as error:
            record_result(EXIT_FAILED, f"{type(error).__name__}: {error}")
            raise


def _resume_sweep(
    sweep_dir: Path, overrides: list[str], from_stage: str | None, only: str | None, dry: bool, console: Any
) -> int:
    from launch.run.sweep import SweepSummary  # lazy: the sweep modules, only for a sweep dir
    from launch.run.sweep_extend import extending_command  # lazy: the sweep modules, only for a sweep dir
    from launch.run.sweep_runs import resume_sweep  # lazy: the sweep modules, only for a sweep dir

    extend = extending_command(SweepSummary.load(sweep_dir), overrides) if overrides else None
    if extend is not None:  # a list typed to add points: the sweep's own line with it extends the sweep
        raise PipelineError(
            f"{sweep_dir} is a sweep: its points resume with their own overrides, and a list is the sweep's "
            f"own line's to give: {extend} (it extends this sweep, running its new points alone)"
        )
    if overrides:
        raise PipelineError(
            f"{sweep_dir} is a sweep: its points resume with their own overrides; to change one point, "
            f"run it alone with t3rl run --run-dir {sweep_dir}/pNN {' '.join(overrides)}"
        )
    if dry:
        raise PipelineError(
            f"{sweep_dir} is a sweep: plan one point with t3rl plan --run-dir {sweep_dir}/pNN"
        )
    # Before any point is composed or anything written (was: its lock refused after every point was
    # composed, with paths.runs_dir as the fix, a key a resume never reads).
    unwritable = unwritable_record(sweep_dir, [], "sweep dir")
    if unwritable is not None:
        raise PipelineError(unwritable)
    return resume_sweep(sweep_dir, from_stage, only, console)
