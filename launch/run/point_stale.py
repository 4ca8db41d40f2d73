"""Whether a sweep point that succeeded is stale: a stage of it that a resume of it alone would run
again (its command, env or config changed since it ran: t3rl's code, a config file, an environment
variable it reads). The decision is the pipeline's own (`launch.run.pipeline.decide`, read without
writing by `preview`) on the point's config composed as a resume of it composes it; a sweep's resume
runs such a point again (launch.run.sweep_runs) and `t3rl runs show <sweep dir>` says so of the point it
calls best (launch.cli.runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from launch.config.errors import ConfigError
from launch.run.override_merge import refuse_masked
from launch.run.pipeline import changes, preview
from launch.run.rundir import RunDir
from launch.run.steps import plan_run, resolve_overrides

if TYPE_CHECKING:
    from rich.console import Console

    from launch.checks.resolve import Resolved
    from launch.output.plain import PlainConsole
    from launch.plan.build import Plan


def composed_point(
    run_dir: RunDir, config_dirs: list[str], console: Console | PlainConsole
) -> tuple[Resolved, Plan]:
    """A point's config and plan as a resume of it composes them: with the overrides it ran with (in
    the current dir: the caller moves to the one it was started in)."""
    stored = run_dir.read_overrides()
    # A point cannot be given an override here: one whose credential was stored masked resumes alone.
    refuse_masked(stored, run_dir.path, f"t3rl run --run-dir {run_dir.path}")
    resolved = resolve_overrides(stored, config_dirs, console)
    return resolved, plan_run(resolved, run_dir)


def changed_since(plan: Plan, run_dir: RunDir) -> str | None:
    """What a resume of the point alone would change, in one line: the pipeline's own decision, read
    without writing (launch.run.pipeline.preview); None when it would change nothing."""
    changed = changes(preview(plan, run_dir).decisions)
    if not changed:
        return None
    first, more = changed[0], len(changed) - 1
    later = f", and {more} later stage{'s' if more > 1 else ''} with it" if more else ""
    return f"stage {first.stage} is stale ({first.reason}){later}"


def not_composed(err: ConfigError) -> str:
    """Why a point's config cannot be composed to check it, in one line."""
    first = err.problems[0]
    more = f" (+{len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
    return f"its config cannot be composed here: {first.key}: {first.message}{more}"
