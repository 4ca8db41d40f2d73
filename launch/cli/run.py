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

from typing import Annotated

import typer

from launch.cli import completion
from launch.cli.run_command import run_command
from launch.cli.sweep_options import MaxPoints
from launch.cli.validate_command import UNKNOWN_OPTIONS_AS_OVERRIDES

_OVERRIDES_HELP = "Hydra overrides, e.g. +experiment=stage1_bfcl model=qwen3_8b hardware.tensor_parallel=4"


Overrides = Annotated[
    list[str] | None,
    completion.overrides_argument(_OVERRIDES_HELP),
]
# Plain str parameters: typer coerces Path ones through pydantic adapters, a cost on every start.
ConfigDirs = Annotated[
    list[str] | None, typer.Option("--config-dir", metavar="DIR", help="Extra config dir (repeatable).")
]
FromStage = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="STAGE",
        help="Rerun this stage and the later stages that read its output, e.g. --from eval_tiny (a stage of "
        "the experiment: `t3rl plan` lists them).",
        autocompletion=completion.stages,
    ),
]
Only = Annotated[
    str | None,
    typer.Option(
        "--only",
        metavar="STAGE",
        help="Run only this stage, e.g. --only eval_tiny (a stage of the experiment: `t3rl plan` lists "
        "them).",
        autocompletion=completion.stages,
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("run", context_settings=UNKNOWN_OPTIONS_AS_OVERRIDES)
    def run(
        overrides: Overrides = None,
        multirun: Annotated[bool, typer.Option("-m", "--multirun", help="Sweep: one run per point.")] = False,
        run_dir: Annotated[
            str | None,
            typer.Option(
                "--run-dir", metavar="DIR", help="Resume this run dir (or every point of a sweep dir)."
            ),
        ] = None,
        from_stage: FromStage = None,
        only: Only = None,
        config_dir: ConfigDirs = None,
        max_points: MaxPoints = None,
    ) -> None:
        """Run the staged pipeline of an experiment (resumable: finished, unchanged stages are skipped).

        A new run goes to <paths.runs_dir>/<name>/<time> (paths.runs_dir: $T3RL_RUNS_DIR, else ./runs).
        Ctrl-C or SIGTERM stops the running stage, records it and prints the command that resumes.

        Examples:

          t3rl run +experiment=quickstart

          t3rl run --run-dir runs/quickstart/20260101-120000     # resume what did not finish

          t3rl run -m +experiment=stage1_bfcl reward=progress,binary     # one run per point
        """
        dirs = config_dir or []
        code = run_command(
            overrides or [], multirun, run_dir, from_stage, only, dirs, dry=False, max_points=max_points
        )
        raise typer.Exit(code)

    @app.command("plan", context_settings=UNKNOWN_OPTIONS_AS_OVERRIDES)
    def plan(
        overrides: Overrides = None,
        multirun: Annotated[
            bool, typer.Option("-m", "--multirun", help="Plan every point of a sweep.")
        ] = False,
        run_dir: Annotated[
            str | None,
            typer.Option(
                "--run-dir", metavar="DIR", help="What `t3rl run --run-dir` would do there (writes nothing)."
            ),
        ] = None,
        out: Annotated[
            str | None,
            typer.Option(
                "--out", metavar="DIR", help="Write the plan here instead of <paths.plans_dir>/<name>/<time>."
            ),
        ] = None,
        from_stage: FromStage = None,
        only: Only = None,
        config_dir: ConfigDirs = None,
        max_points: MaxPoints = None,
    ) -> None:
        """Show every stage and its exact commands, and write them to a plan dir with plan.sh; run nothing.

        The plan dir is <paths.plans_dir>/<name>/<time> (paths.plans_dir: $T3RL_PLANS_DIR, else ./plans)
        unless --out DIR.

        Examples:

          t3rl plan +experiment=bfcl_env_tuning

          t3rl plan +experiment=stage1_bfcl model=qwen3_8b --out my-plan

          t3rl plan --run-dir runs/quickstart/20260101-120000     # what a resume would run
        """
        dirs = config_dir or []
        code = run_command(
            overrides or [],
            multirun,
            run_dir,
            from_stage,
            only,
            dirs,
            dry=True,
            out=out,
            max_points=max_points,
        )
        raise typer.Exit(code)
