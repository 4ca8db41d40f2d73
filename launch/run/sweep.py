"""Sweeps (`t3rl run -m`): expand the points, validate every one before anything runs, keep a summary.

Expansion is Hydra's own (BasicSweeper.split_arguments): `a=1,2 b=x,y` is the cartesian product, a
group choice such as `model=qwen3_4b,qwen3_8b` swaps a whole family. Each point is then resolved,
validated and planned with the same code as a single run; if any point fails, the sweep stops there
with a table naming each bad point and its fixes, and nothing is submitted.

Every point gets its own run dir and two tracking overrides: `tracking.group=<sweep>` and
`tracking.run_name=<sweep>-p<NN>`. The sweep dir holds `sweep.json` (machine-readable) and
`sweep.md` (the same table for people), rewritten after every point so a crash loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from launch.config.errors import ConfigError, Problem
from launch.config.override_fixes import is_glob
from launch.config.secrets import mask_overrides, scrub_obj
from launch.config.sweep_values import OptionsOf, as_choices
from launch.files import write_record
from launch.run.record_files import DEFAULT_METRIC, RunDirError, read_sweep
from launch.run.sweep_bounds import MAX_POINTS
from launch.run.sweep_compare import marks, objective_identity_differences
from launch.run.sweep_limit import check_size
from t3rl_core import outside_json
from t3rl_core.counts import counted
from t3rl_core.finite import finite_real, shown


@dataclass(frozen=True)
class Point:
    """One configuration of a sweep."""

    index: int
    # Every override of this point, in command-line order.
    overrides: tuple[str, ...]
    # Only the swept ones (what distinguishes this point), as key=value.
    varying: tuple[str, ...]
    # Those the sweep added itself (its tracking names): in `overrides`, never typed.
    added: tuple[str, ...] = ()

    def run_name(self, sweep: str) -> str:
        return f"{sweep}-p{self.index:02d}"

    def with_tracking(self, sweep: str) -> tuple[str, ...]:
        """The overrides plus the tracking names of this point within the sweep; a run name typed on the
        command line is kept (one the points share is warned about by `launch.run.sweep_checks`)."""
        return (*self.overrides, *self.tracking(sweep))

    def tracking(self, sweep: str) -> tuple[str, ...]:
        """The tracking names the sweep adds to this point's overrides (`resolving` says they are its); a
        name typed on the command line is the user's (a group typed was replaced by the sweep's, and
        warned about as set twice)."""
        typed = {o.lstrip("+").partition("=")[0] for o in self.overrides}
        names = {"tracking.group": sweep, "tracking.run_name": self.run_name(sweep)}
        return tuple(f"{key}={value}" for key, value in names.items() if key not in typed)

    def tracked(self, sweep: str) -> Point:
        """This point with the sweep's tracking names among its overrides."""
        added = self.tracking(sweep)
        return replace(self, overrides=(*self.overrides, *added), added=added)


@contextlib.contextmanager
def resolving(point: Point) -> Iterator[None]:
    """While a point is resolved: the overrides the sweep added to it are the sweep's, not typed (a
    tracker's names under `tracking.kind: none` are not "set, but nothing reads it")."""
    from launch.checks.rules.unread import ADDED_BY_LAUNCHER  # lazy: the checks, only to resolve a point

    token = ADDED_BY_LAUNCHER.set(frozenset(point.added))
    try:
        yield
    finally:
        ADDED_BY_LAUNCHER.reset(token)


def is_sweep(overrides: Sequence[str]) -> bool:
    """True when any override sweeps (`a=1,2`, `range(...)`, `glob(...)`)."""
    return any(o.is_sweep_override() for o in _parse(overrides))


def expand_points(
    overrides: Sequence[str], config_dirs: Sequence[str] = (), max_points: int | None = None
) -> list[Point]:
    """The cartesian product of the swept overrides, in Hydra's order; a glob is the options of its
    group it matches. ConfigError, before any point is listed, for more than `max_points` points
    (None: MAX_POINTS)."""
    from launch.config.compose import group_options  # lazy: Hydra, only to expand a sweep (not to read one)
    from launch.config.hydra_internals import split_sweep  # lazy: Hydra, only to expand a sweep

    @cache  # a glob's group is listed once, for the sweep's size and for its points
    def options_of(group: str) -> list[str]:
        return group_options(group, config_dirs)

    typed = _parse(overrides)
    refused = [p for p in collapsed_overrides(overrides) if p.severity == "error"]
    if refused:
        raise ConfigError(refused)
    check_size(typed, options_of, MAX_POINTS if max_points is None else max_points)
    parsed = _parse([_without_glob(o, options_of) for o in typed])
    # as typed: a glob matching one option is a sweep of one point, named by its value
    swept_keys = {o.get_key_element() for o in typed if o.is_sweep_override()}
    # A point holds each override it does not sweep as typed: Hydra's split writes them again from its
    # reading (`~key` as `~key=null`), which every message and fix of the point would quote.
    typed_as = {o.get_key_element(): o.input_line for o in parsed if not o.is_sweep_override()}
    batch = [
        [item if item.split("=", 1)[0] in swept_keys else typed_as[item.split("=", 1)[0]] for item in point]
        for point in split_sweep(parsed)
    ]
    points = []
    for index, combination in enumerate(batch):
        varying = tuple(item for item in combination if item.split("=", 1)[0] in swept_keys)
        points.append(Point(index=index, overrides=tuple(combination), varying=varying))
    return points


def collapsed_overrides(overrides: Sequence[str]) -> list[Problem]:
    """The overrides of a sweep's command line that no point holds, judged as a run's line is
    (`launch.checks.override_effects`): Hydra's split keeps one override per key as typed (`seed`, `+seed`
    and `~seed` are three), the last, so `seed=1,2 … seed=3` is one point and `+experiment=a,b …
    +experiment=c` silently c alone; a point then sees nothing set twice."""
    parsed = _parse(overrides)
    same: dict[str, list[str]] = {}
    for typed, override in zip(overrides, parsed, strict=True):
        same.setdefault(override.get_key_element(), []).append(typed)
    if all(len(typed) == 1 for typed in same.values()):
        return []
    from launch.checks.override_effects import replaced_overrides  # lazy: only for a key typed twice

    return [problem for typed in same.values() if len(typed) > 1 for problem in replaced_overrides(typed)]


def _without_glob(override: Any, options_of: OptionsOf) -> str:
    """The override as typed, a glob as the choice sweep of the options it matches."""
    if is_glob(override):
        return as_choices(override, options_of)
    return override.input_line


def _parse(overrides: Sequence[str]) -> list[Any]:
    from launch.config.compose import parse_overrides  # lazy: Hydra, only to expand a sweep (not to read one)

    return parse_overrides(overrides)


@dataclass(frozen=True)
class PointCheck:
    """A point after resolve + validate + plan: its problems, or what the plan produced."""

    point: Point
    problems: tuple[Problem, ...] = ()
    # Whatever the planner returned for a valid point (handed back to the runner unchanged).
    plan: Any = None

    @property
    def ok(self) -> bool:
        return not self.problems


def check_points(points: Sequence[Point], planner: Callable[[Sequence[str]], Any]) -> list[PointCheck]:
    """Plan every point; a ConfigError becomes that point's problems, the others carry their plan."""
    checks = []
    for point in points:
        try:
            with resolving(point):
                checks.append(PointCheck(point=point, plan=planner(point.overrides)))
        except ConfigError as error:
            checks.append(PointCheck(point=point, problems=tuple(error.problems)))
    return checks


def print_points_table(checks: Sequence[PointCheck], console: Console | None = None) -> None:
    """One row per point: its swept overrides and either `ok` or each problem with its fix."""
    console = console or Console()
    table = Table(title=f"{len(checks)} sweep points", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("point", overflow="fold")
    table.add_column("check", overflow="fold")
    for check in checks:
        verdict = "[green]ok[/]"
        if check.problems:
            verdict = "\n".join(_problem_line(p) for p in check.problems)
        table.add_row(str(check.point.index), escape(" ".join(check.point.varying)), verdict)
    console.print(table, soft_wrap=True)
    if checks and not any(c.point.varying for c in checks):
        # `-m` by habit, or a comma list lost to quoting: one run, recorded as a sweep of one point
        console.print(
            "note: no override sweeps (key=a,b), so this sweep has one point; drop -m for a plain run",
            soft_wrap=True,
            markup=False,
        )
    bad = sum(not c.ok for c in checks)
    if bad:
        console.print(
            f"[red]{bad} of {counted(len(checks), 'point')} are invalid[/]; nothing was submitted.",
            soft_wrap=True,
        )


def _problem_line(problem: Problem) -> str:
    line = f"[red]{escape(problem.key or '<config>')}[/]: {escape(problem.message)}"
    if problem.fix:
        line += f"\n  fix: [green]{escape(problem.fix)}[/]"
    return line


@dataclass
class PointRecord:
    """One row of the sweep summary."""

    index: int
    varying: list[str]
    overrides: list[str]
    run_dir: str | None = None
    # planned | waiting (its run dir is held by another launcher) | running | succeeded | failed |
    # interrupted (the launcher was signalled)
    status: str = "planned"
    metric: float | None = None
    error: str | None = None
    # The stage the point is at (or ended in) and its job there (Ray submission id, SLURM job id).
    stage: str | None = None
    job: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


def _launcher() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


@dataclass
class SweepSummary:
    """`<sweep dir>/sweep.json` and `sweep.md`, rewritten atomically on every update."""

    sweep_dir: Path
    name: str
    metric_name: str | None = None
    points: dict[int, PointRecord] = field(default_factory=dict)
    # The host and pid of the t3rl process running the points: a point still `running` after that
    # process died (SIGKILL, lost node) was interrupted.
    launcher: dict[str, Any] = field(default_factory=_launcher)
    # "plan" for a sweep `t3rl plan -m` wrote (never run; `t3rl run --run-dir` refuses it), else "run".
    record: str = "run"
    # An Optuna search's overrides as typed (masked): its trials are its study's, never resumed one by one.
    search: list[str] | None = None
    # Whether this process may write the dir's record: it loaded it (a resume) or wrote it first.
    _claimed: bool = field(default=False, init=False, repr=False, compare=False)

    @classmethod
    def load(cls, sweep_dir: Path) -> SweepSummary:
        """The summary a sweep wrote, to resume it (this process becomes its launcher)."""
        data = read_sweep(sweep_dir)
        summary = cls(
            sweep_dir=sweep_dir,
            name=data["name"],
            metric_name=data.get("metric"),
            record=data.get("record", "run"),
            search=data.get("search"),
        )
        for record in data.get("points", []):
            try:
                summary.points[record["index"]] = PointRecord(**record)
            except TypeError as err:  # a field t3rl never writes, or one missing
                raise RunDirError(f"{sweep_dir / 'sweep.json'}: point {record['index']}: {err}") from None
        summary._claimed = True
        return summary

    def add(self, point: Point) -> None:
        self.points[point.index] = PointRecord(point.index, list(point.varying), list(point.overrides))
        self.write()

    def plan(self, points: Sequence[Point], run_dirs: Mapping[int, str]) -> None:
        """Record every point as planned, with its run dir, before the first one starts (a crash leaves
        them so, and `t3rl run --run-dir <sweep dir>` resumes each)."""
        for point in points:
            self.points[point.index] = PointRecord(
                point.index, list(point.varying), list(point.overrides), run_dir=run_dirs[point.index]
            )
        self.write()

    def update(self, index: int, **changes: Any) -> None:
        record = self.points[index]
        for key, value in changes.items():
            setattr(record, key, value)
        self.write()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric_name,
            "launcher": self.launcher,
            # Where this record was written: its points' run dirs are read below the dir as it is now.
            "sweep_dir": str(self.sweep_dir.resolve()),
            **({"record": self.record} if self.record != "run" else {}),
            **({"search": mask_overrides(self.search)} if self.search is not None else {}),
            "points": [_masked(asdict(self.points[i])) for i in sorted(self.points)],
        }

    def write(self) -> None:
        files = {"sweep.json": json.dumps(self.as_dict(), indent=2) + "\n", "sweep.md": self.markdown()}
        if not self._claimed:
            if not self.sweep_dir.exists() and _created_with(self.sweep_dir, files):
                self._claimed = True
                return
            self._refuse_anothers()
            self._claimed = True
        for name, text in files.items():
            write_record(self.sweep_dir / name, text)  # the sweep's record: durable, as a run's

    def _refuse_anothers(self) -> None:
        """A new sweep's dir is named by the second it started: another sweep started in the same
        second (a script launching several) may have taken it while this one was checked. Its record
        is never written over."""
        try:
            launcher = outside_json.read_file(self.sweep_dir / "sweep.json").get("launcher")
        except (OSError, ValueError, AttributeError):
            return
        if launcher not in (None, self.launcher):
            raise RunDirError(
                f"{self.sweep_dir} was taken meanwhile by another sweep ({launcher}) started in the same "
                "second; nothing of this sweep was written: start it again"
            )

    def markdown(self) -> str:
        from t3rl_core.markdown_cells import table  # lazy: only when a sweep's record is written

        metric = self.metric_name or "metric"
        standing = marks(self)
        lines = [
            f"# sweep {self.name}",
            "",
            f"metric: `{metric}`" + ("" if self.metric_name else " (no eval stage: none is recorded)"),
            "",
            "vs best: points whose 95 % interval overlaps the best point's cannot be told apart from it; a "
            "point whose eval measured another benchmark (identity) is not ranked.",
            "",
        ]
        rows = []
        for i in sorted(self.points):
            r = self.points[i]
            value = "" if r.metric is None else f"{r.metric:.6g}"
            run_dir = os.path.relpath(r.run_dir, self.sweep_dir) if r.run_dir else ""
            status = f"{r.status}: {r.error}" if r.error else r.status
            varying = " ".join(mask_overrides(r.varying))
            rows.append(
                [r.index, varying, run_dir, status, r.stage or "", r.job or "", value, standing.get(i, "")]
            )
        # An error of several lines, an override holding a '|': each cell stays one cell (markdown_cells).
        header = ["#", "point", "run dir", "status", "stage", "job", metric, "vs best (95 % interval)"]
        lines += table(header, rows)
        if (self.sweep_dir / "sweep.png").exists():
            lines += ["", f"![{metric} per point](sweep.png)"]
        return "\n".join(lines) + "\n"


def _masked(record: dict[str, Any]) -> dict[str, Any]:
    """A point's row as written: a credential given literally among its overrides masked."""
    masked = {
        **record,
        "varying": mask_overrides(record["varying"]),
        "overrides": mask_overrides(record["overrides"]),
    }
    return scrub_obj(masked)


def _created_with(sweep_dir: Path, files: Mapping[str, str]) -> bool:
    """Create `sweep_dir` holding `files` in one rename, so that no reader (`t3rl runs`, a resume, a
    launcher killed right then) ever finds the dir without its record; False if it appeared meanwhile.
    The files are staged in the runs dir (the sweep dir's grandparent), not beside the sweep dir, where
    `<runs>/<name>/` would show a second entry for a moment."""
    sweep_dir.parent.mkdir(parents=True, exist_ok=True)
    # Not mkdtemp: its mode 0700 would stay the sweep dir's; mkdir gives the umask's, as any run dir.
    staging = sweep_dir.parent.parent / f".{sweep_dir.name}.{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        for name, text in files.items():
            (staging / name).write_text(text)
        staging.rename(sweep_dir)  # fails on a non-empty dir made meanwhile (and on a file)
    except OSError:
        if not sweep_dir.is_dir():
            raise
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def read_metric(summary: Mapping[str, Any], dotted: str) -> float:
    """The number at a dotted key of an eval summary ("overall.accuracy")."""
    from t3rl_core.eval.metrics import is_rate, newer_definition  # lazy: where a summary's number is read

    newer = newer_definition(summary)
    if newer:  # a newer t3rl's numbers, read by this one's definitions, ranked as this one's
        raise UnreadableMetric(f"{dotted!r}: {newer}")
    node: Any = summary
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"{dotted!r}: no {part!r} in the eval summary (keys: {sorted(node or {})})")
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ValueError(f"{dotted!r} is {node!r}, not a number")
    if not finite_real(node):
        # No eval writes one (rewards and verdicts are held finite); a summary edited or written by
        # another tool may: NaN ranked by max() by its position, and its interval raised out of sweep.md.
        raise UnreadableMetric(f"{dotted!r} is {shown(node)}, not a finite number: rerun that eval")
    if not 0 <= node <= 1 and is_rate(part):
        # A share of tasks no eval writes outside [0, 1]: a summary edited, written by another tool,
        # or in percent (a newer or other writer's scale) was ranked as a rate of 7.
        raise UnreadableMetric(
            f"{dotted!r} is {shown(node)}, outside a rate's [0, 1] (a share of tasks; in percent, or "
            "not written by a t3rl eval?): rerun that eval"
        )
    return float(node)


def metric_label(stages: Sequence[Any], objective: Any = None) -> str | None:
    """What `point_metric` reads, for tables: "<eval stage>: <dotted key>"; None without an eval stage."""
    evals = [s.name for s in stages if s.kind == "eval" and "summary" in s.outputs]
    if objective is not None and objective.stage:
        evals = [name for name in evals if name == objective.stage]
    if not evals:
        return None
    return f"{evals[-1]}: {objective.metric if objective else DEFAULT_METRIC}"


class IncompleteEval(Exception):
    """The eval a point is scored by did not finish: its numbers must not be read."""


class UnreadableMetric(IncompleteEval, ValueError):
    """The metric an eval summary holds is no finite number (NaN, infinity): it must not be read, ranked
    or given to a study (an IncompleteEval and a ValueError, so every caller refusing either refuses
    it)."""


class IncomparableEval(IncompleteEval):
    """The eval a trial is scored by measured another benchmark than the study's: its number must not
    feed the study (an IncompleteEval, so every caller refusing an unusable metric refuses it)."""


def complete_summary(path: Path) -> dict[str, Any]:
    """An eval's summary.json, if it is `complete: true` (IncompleteEval otherwise: its numbers must not
    be read)."""
    summary = outside_json.read_file(path)
    if summary.get("complete") is not True:
        reason = summary.get("reason") or "the eval stopped before every episode finished"
        raise IncompleteEval(f"{path} is incomplete, its metrics are not used: {reason}")
    return summary


def point_metric(stages: Sequence[Any], objective: Any = None) -> float | None:
    """A finished point's score from its eval summary.json: `objective` (stage + dotted metric) when
    set, else the last eval stage's overall accuracy; None when that stage wrote no summary.
    Raises IncompleteEval for a summary without `complete: true` (the engine failed, the run stopped)."""
    evals = [s for s in stages if s.kind == "eval" and "summary" in s.outputs]
    if objective is not None and objective.stage:
        evals = [s for s in evals if s.name == objective.stage]
    if not evals:
        return None
    path = Path(evals[-1].outputs["summary"])
    if not path.exists():
        return None
    summary = complete_summary(path)
    sweep_dir = path.parents[3]  # <sweep dir>/pNN/stages/<stage>/summary.json
    if objective is not None and (sweep_dir / "sweep.json").exists():
        parts = objective_identity_differences(sweep_dir, summary, objective.metric)
        if parts:  # a study ranks only results of one benchmark
            raise IncomparableEval(
                f"{path}: its eval measured another benchmark than the study's first scored trial, so its "
                f"metric is not given to the study: {'; '.join(parts)}"
            )
    return read_metric(summary, objective.metric if objective else DEFAULT_METRIC)
