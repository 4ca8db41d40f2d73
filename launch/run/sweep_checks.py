"""A sweep or a search checked as a whole, before any point runs (`t3rl run|plan|validate -m`).

Each point of a sweep is validated and planned on its own first (`launch.run.sweep.check_points`); what
no single point shows is checked here, over all of them: two points writing one directory (a
`tracking.dir` every point shares puts their TensorBoard events in one run), points that would hold
one port or the GPUs of one machine at once (`launch.checks.ledger`, for the points
`executor.max_parallel` runs together), and points that are the same run (a warning: the sweep does
the same work twice). A search is checked before its study starts: its space at every bound and
choice (`launch.checks.search_space`), and its trials that run at once (`hydra.sweeper.n_jobs`) on
the ledger like the points of a sweep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launch.checks.context import Context
from launch.checks.ledger import sweep_problems as concurrent_problems
from launch.checks.resolve import resolve
from launch.checks.rules.stage_hardware import replaced_root_fields
from launch.checks.rules.unread import Unread, unread_keys, unread_prefix
from launch.checks.search_settings import search_setting_problems
from launch.checks.search_space import PARAMS, Param, edge_values, search_params, search_space_problems
from launch.checks.validate import build_scopes, trial_plan
from launch.config.compose import parse_overrides
from launch.config.errors import ConfigError, Problem, render_problems
from launch.config.override_fixes import shell_word
from launch.plan.tracking import tracking_dir
from launch.run.exit_codes import EXIT_CONFIG
from launch.run.rundir import RunDir
from launch.run.search import is_search
from launch.run.steps import plan_run
from launch.run.sweep import check_points, collapsed_overrides, expand_points, print_points_table
from launch.run.sweep_evals import eval_part_problems
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from rich.console import Console

    from launch.checks.resolve import Resolved
    from launch.plan.build import Plan
    from launch.plan.stages import Stage
    from launch.run.sweep import Point

# Keys a sweep sets per point itself: points differing only there are the same run.
_PER_POINT_KEYS = ("run_name", "group")


@dataclass(frozen=True)
class CheckedPoint:
    """A point that passed its own checks, with its config and plan."""

    point: Point
    resolved: Resolved
    plan: Plan

    @property
    def label(self) -> str:
        return f"p{self.point.index:02d} ({' '.join(self.point.varying)})"


def whole_sweep_problems(points: Sequence[CheckedPoint], overrides: Sequence[str]) -> list[Problem]:
    """What the points of one sweep do to each other (see the module docstring), and the overrides of its
    command line that no point holds (`collapsed_overrides`: a key typed twice)."""
    collapsed = collapsed_overrides(overrides)
    if len(points) < 2:
        return collapsed
    problems = collapsed + _shared_dirs(points) + _same_runs(points, overrides) + _shared_run_names(points)
    swept = [t for t, o in zip(overrides, parse_overrides(overrides), strict=True) if o.is_sweep_override()]
    problems += eval_part_problems([(p.label, p.plan) for p in points], swept, points[0].resolved.config)
    max_parallel = getattr(points[0].resolved.run.executor, "max_parallel", 1)
    problems += concurrent_problems([(p.label, p.resolved.run, p.plan) for p in points], max_parallel)
    source = points[0].resolved.provenance.source
    return [p.with_source(source(p.key)) if p.key else p for p in problems]


def _written_dirs(point: CheckedPoint) -> dict[str, tuple[str, str]]:
    """Directory → (what writes it, the config key that places it) for every directory the point writes
    that is its own: the run dir, the outputs of its stages (cached conversions are shared on purpose)
    and its TensorBoard events."""
    run = point.resolved.run
    dirs = {str(point.plan.run_dir): ("its run dir", "")}
    for stage in point.plan.stages:
        if not stage.complete_when:
            dirs |= {path: (f"stage {stage.name}'s {key}", "") for key, path in stage.outputs.items()}
    if run.tracking.kind == "tensorboard":
        events = str(Path(tracking_dir(run.tracking, point.plan.run_dir)).expanduser().absolute())
        dirs[events] = ("its TensorBoard events", "tracking.dir")
    return dirs


def _shared_dirs(points: Sequence[CheckedPoint]) -> list[Problem]:
    holders: dict[str, tuple[CheckedPoint, str, str]] = {}
    problems = []
    for point in points:
        for path, (what, key) in _written_dirs(point).items():
            first = holders.setdefault(path, (point, what, key))
            if first[0] is point:
                continue
            other, other_what, _ = first
            fix = (
                f"{shell_word(f'tracking.dir={path}/${{tracking.run_name}}')} (one dir per point below it)"
                if key == "tracking.dir"
                else "give each point its own directory"
            )
            problems.append(
                Problem(
                    key,
                    f"points {other.label} and {point.label} both write {path} ({other_what}; {what})",
                    point.resolved.provenance.source(key) if key else "",
                    fix,
                )
            )
    return _first_per_key(problems)


def _shared_run_names(points: Sequence[CheckedPoint]) -> list[Problem]:
    """A warning when the points' tracker runs share one name (a `tracking.run_name` typed on the command
    line, which each point keeps): the tracker lists n runs of that name in one group, none saying which
    point it is. The fix names each run by the key the sweep varies."""
    tracking = points[0].resolved.run.tracking
    names = {p.resolved.run.tracking.run_name for p in points}
    if tracking.kind == "none" or len(names) != 1 or tracking.run_name is None:
        return []
    swept = points[0].point.varying[0].split("=", 1)[0].lstrip("+")
    varying = f"{swept}.name" if isinstance(points[0].resolved.config.get(swept), dict) else swept
    named = shell_word(f"tracking.run_name={tracking.run_name}-${{{varying}}}")
    return [
        Problem(
            "tracking.run_name",
            f"every point of the sweep names its {tracking.kind} run '{tracking.run_name}': the "
            f"{counted(len(points), 'run')} share one name in one group, and none says which point "
            f"({', '.join(p.label for p in points[:3])}{', …' if points[3:] else ''}) it is",
            fix=f"{named} (a name per point); or drop the override (t3rl names each point's run)",
            severity="warning",
        )
    ]


def _same_runs(points: Sequence[CheckedPoint], overrides: Sequence[str]) -> list[Problem]:
    """A warning when points are the same run (a repeated value, a swept key another override replaces):
    with one swept override, the fix is that override with each run once."""
    seen: dict[str, CheckedPoint] = {}
    repeats = []
    unread: set[str] = set()
    for point in points:
        config, dropped = _what_is_read(point)
        first = seen.setdefault(json.dumps(config, sort_keys=True, default=str), point)
        if first is not point:
            repeats.append((first, point))
            unread |= {k for k, v in dropped.items() if _what_is_read(first)[1].get(k, _NOTHING) != v}
    if not repeats:
        return []
    message = "the sweep would do the same run twice: " + ", ".join(
        f"{later.label} is {first.label}" for first, later in repeats
    )
    if unread:
        message += f" (they differ only in {', '.join(sorted(unread))}, which nothing reads)"
    sweeps = [
        (t, o) for t, o in zip(overrides, parse_overrides(overrides), strict=True) if o.is_sweep_override()
    ]
    values = list(sweeps[0][1].sweep_string_iterator()) if len(sweeps) == 1 else []
    if len(values) != len(points):
        return [Problem("", message, "", "drop the values that repeat a run", severity="warning")]
    text, override = sweeps[0]
    later = {point.point.index for _, point in repeats}
    kept = ",".join(v for i, v in enumerate(values) if i not in later)
    once = shell_word(text.split("=", 1)[0] + "=" + kept)
    fix = f"{once} (each run once; vary the seed to repeat one on purpose)"
    return [Problem(override.key_or_group, message, f"override `{text}`", fix, severity="warning")]


_NOTHING = object()


def _what_is_read(point: CheckedPoint) -> tuple[dict[str, Any], dict[str, Any]]:
    """The point's config without the keys a sweep sets per point and those nothing reads
    (`launch.checks.rules.unread`), and the values of the latter (key → value)."""
    resolved = point.resolved
    # The validated values, not the text composed: `seed=1,01` or `lr=1e-6,0.000001` are one run (Hydra
    # keeps '01' a string, which the schema reads as 1)
    config = resolved.run.model_dump(mode="json")
    config["tracking"] = {k: v for k, v in config.get("tracking", {}).items() if k not in _PER_POINT_KEYS}
    scopes, _ = build_scopes(resolved.run, resolved.config, resolved.provenance)
    dropped = {}
    judged = Context(
        run=resolved.run,
        data=resolved.config,
        provenance=resolved.provenance,
        scopes=tuple(scopes),
        builds=lambda trial: trial_plan(trial)[0] is not None,
    )
    # what every train stage's overlay replaces in the root hardware, as the point's own warning says
    for key in [*unread_keys(resolved.run, scopes), *replaced_root_fields(judged)]:
        *parents, leaf = key.split(".")
        node: Any = config
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            dropped[key] = node.pop(leaf)
    return config, dropped


def _first_per_key(problems: list[Problem]) -> list[Problem]:
    """One problem per key and directory: a sweep of n points sharing a dir says so once."""
    kept: dict[tuple[str, str], Problem] = {}
    for problem in problems:
        kept.setdefault((problem.key, problem.message.rpartition(" both write ")[2]), problem)
    return list(kept.values())


# -------------------------------------------------------------------------------------------- searches


def search_problems(overrides: Sequence[str], first: Resolved, config_dirs: Sequence[str]) -> list[Problem]:
    """The search's space at each bound and choice, and its trials that run at once on the ledger."""
    sweeper = first.hydra.get("sweeper") or {}

    def source_of(key: str) -> str:
        set_by = [o for o in overrides if o.lstrip("+").split("=", 1)[0] == key]
        return f"override `{set_by[-1]}`" if set_by else first.provenance.source(key)

    other = _other_sweeper(sweeper, source_of)
    if other is not None:  # its settings are another sweeper's: Hydra refuses them when the search starts
        return [other]
    settings = search_setting_problems(sweeper, source_of)
    if settings:  # a study that would not start (or do nothing): its space is judged once it can run
        return settings
    from launch.checks.search_direction import objective_direction_problems  # lazy: only a search

    aimed = objective_direction_problems(first.run.objective, sweeper, source_of)
    if any(p.severity == "error" for p in aimed):  # every trial would score alike: no space to judge
        return aimed
    params = search_params(sweeper, overrides, first.provenance.source)
    base = search_base(overrides, config_dirs)
    n_trials = int(sweeper.get("n_trials") or 1)
    unread: dict[tuple[str, ...], dict[str, Unread]] = {}
    problems = search_space_problems(
        params, base, first.config, lambda o: _problems_of(o, config_dirs, unread), n_trials
    )
    if not any(p.severity == "error" for p in problems):
        problems += _unread_entries(params, unread)
        problems += _trial_eval_problems(params, base, first, config_dirs)
    n_jobs = int(sweeper.get("n_jobs") or 1)
    if n_jobs > 1 and not problems:
        problems += _trials_at_once(first, n_jobs, source_of("hydra.sweeper.n_jobs"))
    return [*aimed, *problems]


# The sweeper a search runs on (launch.run.search): Hydra's Optuna sweeper plugin.
_OPTUNA_SWEEPER = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"


def _other_sweeper(sweeper: Mapping[str, Any], source_of: Callable[[str], str]) -> Problem | None:
    """A search file that chose another sweeper (`override /hydra/sweeper: basic`): t3rl runs a search on
    Optuna's alone (was: valid here, then `t3rl run -m` said each point succeeded and each trial failed,
    "Error executing job")."""
    target = str(sweeper.get("_target_") or "")
    if not target or target == _OPTUNA_SWEEPER:
        return None
    source = source_of("hydra.sweeper") or "the hparams_search file chosen"
    return Problem(
        "hydra.sweeper",
        f"a search runs on Hydra's Optuna sweeper, and this one chose {target.rpartition('.')[2]} ({target})",
        source,
        fix="in the hparams_search file, choose `- override /hydra/sweeper: optuna` in its defaults list "
        "(for a grid of every combination, drop the search and sweep: t3rl run -m key=a,b)",
    )


def _trial_eval_problems(
    params: Sequence[Param], base: Sequence[str], first: Resolved, config_dirs: Sequence[str]
) -> list[Problem]:
    """Entries whose values give the trials' evals different budgets, decodings or protocols: the study
    refuses such a trial's metric (sweep.IncomparableEval) after it has trained. Each entry is planned at
    its edges, the others at their configured values."""
    problems = []
    for param in params:
        points = []
        for value in edge_values(param):
            overrides = [*base, f"{param.key}={value}"]
            run_dir = RunDir(Path.cwd() / "<search dir>" / f"{param.key}={value}")
            points.append((f"{param.key}={value}", plan_run(resolve(overrides, config_dirs), run_dir)))
        if len(points) > 1:
            problems += eval_part_problems(points, [f"{param.key}={param.text}"], first.config, search=True)
    return problems


def search_base(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> list[str]:
    """The overrides every trial of a search has: those that do not sweep."""
    parsed = parse_overrides(overrides, config_dirs)
    return [o for o, override in zip(overrides, parsed, strict=True) if not override.is_sweep_override()]


def _trials_at_once(first: Resolved, n_jobs: int, source: str) -> list[Problem]:
    """Trials differ only in the searched values, so two copies of the base point hold what any two
    trials of a batch hold together."""
    trials = [
        (f"p{i:02d}", first.run, plan_run(first, RunDir(Path.cwd() / "<search>" / f"p{i:02d}")))
        for i in range(2)
    ]
    return [
        Problem(
            "hydra.sweeper.n_jobs",
            f"the {counted(n_jobs, 'trial')} of a batch run at once: {problem.message}",
            source,
            "set hydra.sweeper.n_jobs=1 (one trial at a time on this machine), or executor=slurm "
            "(each trial its own nodes)",
        )
        for problem in concurrent_problems(trials, None)
    ]


def _problems_of(
    overrides: Sequence[str], config_dirs: Sequence[str], unread: dict[tuple[str, ...], dict[str, Unread]]
) -> list[Problem]:
    """The problems of a run from these overrides; what nothing reads in it goes into `unread`."""
    try:
        resolved = resolve(list(overrides), config_dirs)
    except ConfigError as error:
        return list(error.problems)
    scopes, _ = build_scopes(resolved.run, resolved.config, resolved.provenance)
    unread[tuple(overrides)] = unread_keys(resolved.run, scopes)
    return []


def _unread_entries(
    params: Sequence[Param], probed: Mapping[tuple[str, ...], dict[str, Unread]]
) -> list[Problem]:
    """Entries whose key nothing reads in any run the space was probed with (each entry at its edges,
    the others set as a trial sets them; `launch.checks.rules.unread`): every trial runs the same
    whatever Optuna picks there, and the sampler models a dimension with no effect (was: valid, as
    `tracking.project=choice(a,b)` under `tracking=none`). A warning, as a sweep's points that differ
    only in such keys are."""
    problems = []
    for param in params:
        name = param.key.lstrip("+~")
        runs = [
            unread
            for overrides, unread in probed.items()
            if any(o.startswith(f"{param.key}=") for o in overrides)
        ]
        why = [unread[prefix] for unread in runs if (prefix := unread_prefix(name, unread)) is not None]
        if not runs or len(why) < len(runs):
            continue
        source = param.source.removeprefix("override ")
        problems.append(
            Problem(
                name if param.from_command_line else f"{PARAMS}.{param.key}",
                f"the search entry '{param.text}' searches {name}, which nothing reads ({why[0].why}): every "
                "trial runs the same whatever value is picked there",
                param.source,
                f"{why[0].instead}; or drop the entry ({source})"
                if param.from_command_line
                else f"{why[0].instead}; or drop the entry from {source}",
                severity="warning",
            )
        )
    return problems


def refuse_whole_sweep(
    points: Sequence[CheckedPoint], overrides: Sequence[str], only: str | None, console: Console
) -> None:
    """`whole_sweep_problems` for a sweep about to run (`--only S`: S is all each point runs); warnings
    printed, errors raised (ConfigError)."""
    if only is not None:
        points = [replace(p, plan=p.plan._replace(stages=_only(p.plan.stages, only))) for p in points]
    problems = whole_sweep_problems(points, overrides)
    warnings = [p for p in problems if p.severity == "warning"]
    if any(p.severity == "error" for p in problems):
        raise ConfigError(problems)
    if warnings:
        render_problems(warnings, console)


def _only(stages: tuple[Stage, ...], name: str) -> tuple[Stage, ...]:
    """The stage `--only` names (all of them when none has that name: the pipeline refuses it later)."""
    return tuple(s for s in stages if s.name == name) or stages


# ------------------------------------------------------------------------------------------ validate -m


def validate_multirun(
    overrides: list[str], config_dirs: list[str], console: Console, max_points: int | None = None
) -> int:
    """`t3rl validate -m`: every point (or the search space) and the sweep as a whole; nothing written.
    Each point's problems are in its row of the table printed, those of the whole below it; exit code."""
    if is_search(overrides):
        first = resolve(search_base(overrides, config_dirs), config_dirs)
        problems = search_problems(overrides, first, config_dirs)
    else:
        # Tracked as `t3rl run -m` tracks them: each point's own run name (a tracking dir may name it).
        swept = expand_points(overrides, config_dirs, max_points)
        points = [p.tracked("sweep") for p in swept]
        pending = iter(points)

        def planner(point_overrides: Sequence[str]) -> CheckedPoint:
            point = next(pending)
            resolved = resolve(list(point_overrides), config_dirs)
            run_dir = RunDir(Path.cwd() / "<sweep dir>" / f"p{point.index:02d}")
            return CheckedPoint(point, resolved, plan_run(resolved, run_dir))

        checks = check_points(points, planner)
        print_points_table(checks, console)
        if not all(check.ok for check in checks):
            return EXIT_CONFIG
        # each point's warnings, as `t3rl run -m` and `plan -m` print them while they plan it (once each)
        problems = list({w: None for check in checks for w in check.plan.resolved.warnings})
        problems += whole_sweep_problems([check.plan for check in checks], overrides)
    if problems:
        render_problems(problems)
    if any(p.severity == "error" for p in problems):
        return EXIT_CONFIG
    what = "its search space at every bound and choice" if is_search(overrides) else "every point"
    console.print(f"[green]valid[/]: the sweep as a whole and {what}")
    return 0
