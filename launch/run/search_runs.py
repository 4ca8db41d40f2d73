"""An Optuna search (`hparams_search=<name>`): trials run one after another, each a full run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from launch.run.steps import execute, new_sweep_dir, plan_run, resolve_overrides, write_run_dir

if TYPE_CHECKING:
    from rich.console import Console

    from launch.run.sweep import Point


def run_search_trials(overrides: list[str], config_dirs: list[str], console: Console) -> int:
    """An Optuna search (hparams_search=<name>): each trial is a full run; its metric feeds the study."""
    from datetime import datetime

    from launch.config.errors import ConfigError
    from launch.run.rundir import RunDir
    from launch.run.search import TrialOutcome, run_search
    from launch.run.sweep import point_metric

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    first = resolve_overrides([o for o in overrides if "," not in o], config_dirs, console)
    sweep_dir = new_sweep_dir(first, stamp)
    objective = first.run.objective

    def run_trial(point: Point) -> TrialOutcome:
        run_dir = RunDir(sweep_dir / f"p{point.index:02d}")
        try:
            resolved = resolve_overrides(list(point.with_tracking(sweep_dir.name)), config_dirs, console)
            run_dir.path.mkdir(parents=True, exist_ok=True)
            plan = plan_run(resolved, run_dir)
        except ConfigError as error:
            return TrialOutcome(None, "failed", None, str(error))
        write_run_dir(run_dir, resolved, plan, config_dirs)
        result = execute(plan, run_dir, resolved, None, None, dry=False, console=console)
        if result.status != "succeeded":
            return TrialOutcome(str(run_dir.path), result.status, None, result.failed_stage)
        metric = point_metric(plan.stages, objective)
        return TrialOutcome(
            str(run_dir.path), "succeeded", metric, None if metric is not None else "no eval summary"
        )

    results = run_search(
        overrides,
        sweep_dir=sweep_dir,
        name=sweep_dir.name,
        run_trial=run_trial,
        config_dirs=config_dirs,
        metric_name=objective.metric if objective else None,
    )
    console.print(f"search done: {sweep_dir} best {results.get('best_params')} = {results.get('best_value')}")
    return 0
