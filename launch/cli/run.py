"""`t3rl run` and `t3rl plan`: overrides → resolved config → plan → run dir → executor.

    t3rl run  [OVERRIDES…] [-m] [--run-dir DIR] [--from STAGE | --only STAGE] [--config-dir DIR…]
    t3rl plan [OVERRIDES…] [-m] [--run-dir DIR | --out DIR] [--from STAGE | --only STAGE] [--config-dir DIR…]

A sweep's points each run as their own launcher process, `executor.max_parallel` at a time
(default 1 for local, all for ray/slurm), shown in one live table; `--run-dir <sweep dir>` resumes
every point that has not succeeded, re-attaching to its jobs.

`plan` is `run` with the dry executor: it writes a plan dir (config, manifest, plan.sh, every stage's
command.sh) under `paths.plans_dir` (or `--out DIR`), never under the runs dir, and runs nothing.
`run --run-dir R` resumes R with the overrides it ran with; overrides given now are merged into
them (a key given again is replaced) and every attempt's overrides are kept in
R/overrides.history.yaml. `plan --run-dir R` shows what that resume would change and run, and
writes nothing at all. `-m` expands Hydra sweep syntax (`reward=progress,binary`), validates every
point before any starts, and gives each point its own run dir.

Exit codes: 0 done, 1 a stage failed (or the run dir cannot be used), 2 config error, 130 stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

_OVERRIDES_HELP = "Hydra overrides, e.g. +experiment=stage1_bfcl model=qwen3_8b hardware.tensor_parallel=4"


Overrides = Annotated[list[str] | None, typer.Argument(help=_OVERRIDES_HELP, show_default=False)]
# Plain str parameters: typer coerces Path ones through pydantic adapters, a cost on every start.
ConfigDirs = Annotated[list[str] | None, typer.Option("--config-dir", help="Extra config dir (repeatable).")]
FromStage = Annotated[str | None, typer.Option("--from", help="Rerun this stage and every stage after it.")]
Only = Annotated[str | None, typer.Option("--only", help="Run only this stage.")]


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        overrides: Overrides = None,
        multirun: Annotated[bool, typer.Option("-m", "--multirun", help="Sweep: one run per point.")] = False,
        run_dir: Annotated[
            str | None, typer.Option("--run-dir", help="Resume this run dir (or every point of a sweep dir).")
        ] = None,
        from_stage: FromStage = None,
        only: Only = None,
        config_dir: ConfigDirs = None,
    ) -> None:
        """Run the staged pipeline of an experiment (resumable: finished, unchanged stages are skipped)."""
        raise typer.Exit(
            main(overrides or [], multirun, run_dir, from_stage, only, config_dir or [], dry=False)
        )

    @app.command("plan")
    def plan(
        overrides: Overrides = None,
        multirun: Annotated[
            bool, typer.Option("-m", "--multirun", help="Plan every point of a sweep.")
        ] = False,
        run_dir: Annotated[
            str | None,
            typer.Option("--run-dir", help="What `t3rl run --run-dir` would do there (writes nothing)."),
        ] = None,
        out: Annotated[
            str | None,
            typer.Option("--out", help="Write the plan here instead of <paths.plans_dir>/<name>/<time>."),
        ] = None,
        from_stage: FromStage = None,
        only: Only = None,
        config_dir: ConfigDirs = None,
    ) -> None:
        """Show every stage and its exact commands, and write them to a plan dir with plan.sh; run nothing."""
        raise typer.Exit(
            main(overrides or [], multirun, run_dir, from_stage, only, config_dir or [], dry=True, out=out)
        )


def main(
    overrides: list[str],
    multirun: bool,
    run_dir: str | None,
    from_stage: str | None,
    only: str | None,
    config_dirs: list[str],
    *,
    dry: bool,
    out: str | None = None,
) -> int:
    """The whole command; returns the exit code."""
    import os
    import signal

    from rich.console import Console

    from launch.config.errors import ConfigError, render_problems
    from launch.run.exit_codes import EXIT_CONFIG, EXIT_FAILED, EXIT_STOPPED
    from launch.run.parallel import record_result
    from launch.run.pipeline import PipelineError
    from launch.run.rundir import RunDirError, prefetched_manifest_facts
    from launch.run.single import run_single
    from launch.run.steps import t3rl_root

    console = Console(highlight=False)
    # `--config-dir=~/x` reaches us unexpanded (the shell expands ~ only at a word's start); run dirs
    # record absolute paths, so a resumed run or sweep point finds them from any directory.
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
    # The manifest's git state and platform string are computed meanwhile, on a thread.
    with prefetched_manifest_facts(t3rl_root()):
        # A SIGTERM (scheduler, `kill`) stops stages like Ctrl-C does, so the state records it.
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            if run_dir is not None and (Path(run_dir).expanduser() / "sweep.json").exists():
                return _resume_sweep(Path(run_dir).expanduser(), overrides, from_stage, only, dry, console)
            if multirun:
                if run_dir is not None:
                    raise PipelineError(
                        f"--run-dir {run_dir} is not a sweep dir (no sweep.json): a new sweep makes its own"
                    )
                if out is not None:
                    raise PipelineError("--out names one dir; a planned sweep makes one dir per point")
                from launch.run.search import is_search

                if is_search(overrides):
                    from launch.run.search_runs import run_search_trials

                    return run_search_trials(overrides, dirs, console, dry=dry)
                from launch.run.sweep_runs import run_sweep

                return run_sweep(overrides, dirs, from_stage, only, dry=dry, console=console)
            path = Path(run_dir) if run_dir is not None else None
            out_path = Path(out) if out is not None else None
            return run_single(overrides, dirs, path, from_stage, only, dry=dry, console=console, out=out_path)
        except ConfigError as error:
            render_problems([*error.problems, *error.warnings], Console(stderr=True))
            record_result(EXIT_CONFIG, "; ".join(f"{p.key}: {p.message}" for p in error.problems))
            return EXIT_CONFIG
        except (PipelineError, RunDirError) as error:
            Console(stderr=True).print(f"[red]error:[/] {error}", soft_wrap=True, highlight=False)
            record_result(EXIT_FAILED, str(error).splitlines()[0])
            return EXIT_FAILED
        except KeyboardInterrupt:
            console.print("[yellow]stopped[/]: stages that were running are recorded as stopped.")
            record_result(EXIT_STOPPED, "stopped by a signal (Ctrl-C, SIGTERM)")
            return EXIT_STOPPED
        except Exception as error:
            record_result(EXIT_FAILED, f"{type(error).__name__}: {error}")
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)


def _resume_sweep(
    sweep_dir: Path, overrides: list[str], from_stage: str | None, only: str | None, dry: bool, console: Any
) -> int:
    from launch.run.pipeline import PipelineError
    from launch.run.sweep_runs import resume_sweep

    if overrides:
        raise PipelineError(
            f"{sweep_dir} is a sweep: its points resume with their own overrides; to change one point, "
            f"run it alone with t3rl run --run-dir {sweep_dir}/pNN {' '.join(overrides)}"
        )
    if dry:
        raise PipelineError(
            f"{sweep_dir} is a sweep: plan one point with t3rl plan --run-dir {sweep_dir}/pNN"
        )
    return resume_sweep(sweep_dir, from_stage, only, console)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
