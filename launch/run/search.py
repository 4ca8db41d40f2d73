"""Hyper-parameter search through Hydra's Optuna sweeper plugin, driven from the Typer CLI.

`t3rl run -m hparams_search=<name> …` selects a `conf/hparams_search/<name>.yaml`, which swaps in the
plugin (`override /hydra/sweeper: optuna`), declares the search space in the plugin's own format
(`hydra.sweeper.params`, e.g. `tag(log, interval(1e-7, 1e-5))`, `choice(progress, binary)`) and names
the objective (`objective.stage`, `objective.metric`: a dotted key of that eval stage's summary.json).

Why the plugin rather than our own ask/tell loop: the search space, sampler, direction, trial count
and storage stay plain Hydra config that users already know, and the plugin's own sampling and
study handling run unchanged. The CLI is not `@hydra.main`, so this module does what `hydra.main`
would: it builds a `Hydra` object over t3rl's config search path and calls its `multirun`, which
instantiates the sweeper from the composed `hydra.sweeper` node. The sweeper asks the study for
`n_jobs` trials at a time and hands each batch to its launcher; t3rl's launcher (`_TrialsLauncher`)
runs the batch as t3rl points (resolve → validate → plan → execute, each its own run dir; a batch of
several at once, each its own launcher process as in a parallel sweep) and returns each objective; a
trial whose run fails or has no metric is a failed trial (`max_failure_rate` applies).
The plugin writes `optimization_results.yaml` into the sweep dir next to our `sweep.json`.

The plugin and optuna are imported when a search runs; Hydra at the top (this module is imported
only for sweeps, which parse their overrides with Hydra anyway).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus

from launch.config.errors import Problem
from launch.config.hydra_internals import launcher_override, optuna_capable_hydra
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.search_path import PACKAGE_SOURCE
from launch.run.exit_codes import INTERRUPTED
from launch.run.rundir import now
from launch.run.sweep import Point, SweepSummary
from t3rl_core.secret import mask_text
from t3rl_core.yaml_text import safe_load

SEARCH_GROUP = "hparams_search"


@dataclass(frozen=True)
class TrialOutcome:
    """What running one trial's point produced."""

    run_dir: str | None
    status: str
    metric: float | None
    error: str | None = None


# Runs one batch of trials (their points, with their full override lists; the search's summary, which
# it may update as the trials go) and reports how each went.
TrialsRunner = Callable[[Sequence[Point], SweepSummary], list[TrialOutcome]]


def is_search(overrides: Sequence[str]) -> bool:
    """True when the overrides select an hparams_search config."""
    return any(o.lstrip("+").split("=", 1)[0] == SEARCH_GROUP for o in overrides)


def register_sweeper_configs() -> None:
    """Make `hydra/sweeper: optuna` composable (its plugin registers the config when imported)."""
    # lazy: the plugin imports optuna: only when a search runs
    import hydra_plugins.hydra_optuna_sweeper.config  # noqa: F401


def run_search(
    overrides: Sequence[str],
    *,
    sweep_dir: Path,
    name: str,
    run_trials: TrialsRunner,
    config_dirs: Sequence[str] = (),
    metric_name: str | None = None,
) -> dict[str, Any]:
    """Run the Optuna study of the selected hparams_search config; returns the plugin's results file.

    The sweeper asks for `hydra.sweeper.n_jobs` trials at a time and hands them to its launcher;
    t3rl's launcher gives each batch to `run_trials` (which may run them at once) and returns each
    trial's metric, or its failure, which Optuna records as a failed trial (`max_failure_rate`)."""
    register_sweeper_configs()
    _log_through_logging()
    summary = SweepSummary(sweep_dir=sweep_dir, name=name, metric_name=metric_name, search=list(overrides))
    # Hydra wants `experiment=x` for groups the primary config lists as null; t3rl takes `+experiment=x` too.
    base = [
        o[1:] if o.startswith("+") and o[1:].split("=", 1)[0] in OPTIONAL_GROUPS else o for o in overrides
    ]
    launcher = _TrialsLauncher(summary, base, run_trials)
    GlobalHydra.instance().clear()
    try:
        dirs = [str(Path(directory).resolve()) for directory in config_dirs]
        hydra = optuna_capable_hydra("t3rl", PACKAGE_SOURCE, dirs)
        with launcher_override(launcher), _scored_or_none(launcher):
            hydra.multirun(
                config_name="config",
                task_function=lambda _: None,  # never called: the launcher runs the trials
                overrides=[
                    *base,
                    f"hydra.sweep.dir={sweep_dir}",
                    # Trials write nothing through Hydra: its per-job dir is the sweep dir itself.
                    "hydra.sweep.subdir=.",
                    # t3rl writes its own run dirs; Hydra's per-job copies and cwd changes are not wanted.
                    "hydra.output_subdir=null",
                    "hydra.job.chdir=false",
                    "hydra/job_logging=none",
                    "hydra/hydra_logging=none",
                ],
                with_log_configuration=False,
            )
    finally:
        GlobalHydra.instance().clear()
    return safe_load((sweep_dir / "optimization_results.yaml").read_text())


@contextmanager
def _scored_or_none(launcher: _TrialsLauncher) -> Iterator[None]:
    """The sweeper's error for a study without one scored trial, as NoTrialScored (what happened,
    not a crash); any other error as it is."""
    try:
        yield
    except ValueError:
        if launcher.trials and not launcher.scored:
            raise NoTrialScored(
                f"none of the {launcher.trials} trial(s) gave a metric, so the study has no best trial"
            ) from None
        raise


def storage_problem(sweeper: Mapping[str, Any]) -> Problem | None:
    """Why Optuna could not open `hydra.sweeper.storage` (a URL SQLAlchemy cannot read, an unknown
    dialect, a database driver that is not installed), found before the search writes anything;
    None when it can (or the study is in memory)."""
    storage = sweeper.get("storage")
    if not isinstance(storage, str) or not storage or "${" in storage:
        return None
    from sqlalchemy.engine import make_url  # lazy: sqlalchemy, only for a study's storage URL

    # lazy: sqlalchemy, only for a study's storage URL
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    key, source = "hydra.sweeper.storage", "the hparams_search config or a hydra.sweeper.storage override"
    broken = _database_storage_broken()
    in_memory = f"or {key}=null (a study in memory)" + (
        "" if broken else f" or {key}=sqlite:///<dir>/study.db"
    )
    try:
        url = make_url(storage)
        dialect = url.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as error:
        message = f"Optuna cannot use storage {mask_text(storage)!r}: {str(error).splitlines()[0]}"
        return Problem(key, message, source, f"give an SQLAlchemy database URL {in_memory}")
    try:
        dialect.import_dbapi()
    except ImportError as error:
        message = (
            f"Optuna cannot open storage {mask_text(storage)!r}: SQLAlchemy's {url.get_backend_name()} "
            f"dialect needs the driver '{dialect.driver}', which is not installed ({error})"
        )
        return Problem(
            key, message, source, f"install '{dialect.driver}' into t3rl's environment, {in_memory}"
        )
    if broken:
        message = f"Optuna cannot keep a study in {mask_text(storage)!r} or any database here: {broken}"
        return Problem(key, message, source, f"set {key}=null (a study in memory: it is not resumable)")
    return None


@cache
def _database_storage_broken() -> str:
    """Why this environment's Optuna cannot keep a study in any SQL database, found by making one in a
    temporary SQLite file; "" when it can. Optuna 2.x (what hydra-optuna-sweeper 1.3 takes) never commits
    its schema version under SQLAlchemy 2, so every database storage ended in a bare AssertionError
    ("t3rl failed unexpectedly"), `sqlite:///…` as much as a server."""
    import optuna  # lazy: optuna, only for a study's storage URL
    import sqlalchemy  # lazy: sqlalchemy, only for a study's storage URL

    with tempfile.TemporaryDirectory(prefix="t3rl-optuna-probe-") as directory:
        try:
            optuna.storages.RDBStorage(f"sqlite:///{directory}/probe.db")
        except Exception as error:  # any failure of the probe is the answer, whatever its kind
            what = ": ".join([type(error).__name__, *str(error).splitlines()[:1]])
            versions = f"Optuna {optuna.__version__} with SQLAlchemy {sqlalchemy.__version__}"
            return f"{versions} could not create a study in a new SQLite file ({what})"
    return ""


def _log_through_logging() -> None:
    """Optuna's records go to Python's logging like the sweeper's: its own default handler keeps the
    stderr it first saw, which a second search in one process (tests, a notebook) finds closed and
    prints a logging traceback for. Warnings still reach stderr (logging's last resort)."""
    import optuna  # lazy: optuna, only while an Optuna search runs

    optuna.logging.disable_default_handler()
    optuna.logging.enable_propagation()


class TrialFailed(RuntimeError):
    """A trial that gave no metric; the sweeper re-raises it once `max_failure_rate` is exceeded."""


class NoTrialScored(RuntimeError):
    """Every trial of the study failed within `max_failure_rate`: the study has no best trial (the
    sweeper's own `study.best_trial` raised a ValueError, reported as a bug in t3rl)."""


def _parsed(overrides: Sequence[str]) -> list[tuple[str, Any]]:
    """(key, value) of each override as Hydra reads it, comparable across spellings."""
    return [
        (o.get_key_element(), repr(o.value()))
        for o in OverridesParser.create().parse_overrides(list(overrides))
    ]


def _as_the_study_has_it(outcome: TrialOutcome) -> str:
    """A trial's status as the study records it: without a metric it is a failed trial there, whatever
    its run did (one that succeeded with no eval summary to score it by was listed `succeeded`)."""
    return "failed" if outcome.metric is None and outcome.status == "succeeded" else outcome.status


class _TrialsLauncher:
    """What the Optuna sweeper launches its batches of trials with (Hydra's launcher protocol)."""

    def __init__(self, summary: SweepSummary, base: Sequence[str], run_trials: TrialsRunner) -> None:
        self.summary = summary
        self.base = list(base)
        self.run_trials = run_trials
        # Trials launched, and those that gave the study a metric.
        self.trials = self.scored = 0

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
        base = _parsed(self.base)
        points = [
            Point(
                index=initial_job_idx + i,
                overrides=tuple(trial),
                # What the sampler chose: Hydra hands the base overrides back normalised
                # (`x=false` as `x=False`), so they are compared parsed.
                varying=tuple(
                    o for o, parsed in zip(trial, _parsed(trial), strict=True) if parsed not in base
                ),
            )
            for i, trial in enumerate(job_overrides)
        ]
        for point in points:
            self.summary.add(point)
            self.summary.update(point.index, status="running", started_at=now())
        try:
            outcomes = self.run_trials(points, self.summary)
        except BaseException as error:
            # Whatever ends the batch, no trial of it stays `running` in the record.
            interrupted = isinstance(error, KeyboardInterrupt)
            reason = INTERRUPTED if interrupted else f"{type(error).__name__}: {error}"
            for point in points:
                if self.summary.points[point.index].status == "running":
                    status = "interrupted" if interrupted else "failed"
                    self.summary.update(point.index, status=status, error=reason.splitlines()[0])
            raise
        returns = []
        self.trials += len(points)
        self.scored += sum(outcome.metric is not None for outcome in outcomes)
        for point, outcome in zip(points, outcomes, strict=True):
            self.summary.update(
                point.index,
                run_dir=outcome.run_dir,
                status="failed"
                if outcome.metric is None and outcome.status == "succeeded"
                else outcome.status,
                metric=outcome.metric,
                error=outcome.error,
                finished_at=self.summary.points[point.index].finished_at or now(),
            )
            result = JobReturn(overrides=list(point.overrides), status=JobStatus.COMPLETED)
            result.return_value = outcome.metric
            if outcome.metric is None:
                result.status = JobStatus.FAILED
                result.return_value = TrialFailed(
                    f"trial {point.index} ({' '.join(point.varying)}): {outcome.error or outcome.status}"
                )
            returns.append(result)
        return returns
