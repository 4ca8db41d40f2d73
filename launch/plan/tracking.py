"""Experiment tracking: slime's wandb / tensorboard flags, their environment, and the launcher's own run.

Names (conf/tracking/*.yaml): project = `tracking.project` (else the experiment name); group =
`tracking.group` (else the experiment name; a sweep sets it to the sweep's name); run name =
`tracking.run_name` (else the run's id; a sweep sets it to the point's name).

slime names its wandb run after `--wandb-group` when `--disable-wandb-random-suffix` is given (with
the suffix it would also rename the group, splitting a sweep into one group per run), so slime's
runs land in the configured group; the point's own name goes to the launcher's run, which logs the
resolved config, the manifest and each stage's status and metrics.

tensorboard is the in-job tracker only: slime writes its event files to TENSORBOARD_DIR. The launcher
writes none (there is no event writer here without the tensorboard package); its stage records stay
in the run dir.

Secrets: the wandb key is never a flag (`--wandb-key` would land in slime's logged args); wandb reads
WANDB_API_KEY from the environment. Without one, wandb runs offline. wandb is imported lazily.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from launch.config.schema import RunConfig, TrackingConfig
from launch.config.secrets import scrub_obj
from t3rl_core import outside_json
from t3rl_core.records import Record


class TrackingNames(Record):
    project: str
    group: str
    run_name: str


def tracking_names(tracking: TrackingConfig, *, experiment: str, run_id: str) -> TrackingNames:
    """The configured names, with the experiment and the run id as defaults."""
    return TrackingNames(
        project=tracking.project or experiment,
        group=tracking.group or experiment,
        run_name=tracking.run_name or run_id,
    )


def effective_wandb_mode(tracking: TrackingConfig, environ: Mapping[str, str] | None = None) -> str:
    """`tracking.mode`, except that online without WANDB_API_KEY becomes offline (sync it later)."""
    env = os.environ if environ is None else environ
    if tracking.mode == "online" and not env.get("WANDB_API_KEY"):
        return "offline"
    return tracking.mode


def tracking_dir(tracking: TrackingConfig, run_dir: str | Path) -> str:
    """Where wandb's files or tensorboard's event files go (default: inside the run dir). A relative
    tracking.dir is taken from where t3rl runs: slime writes there from its own checkout's directory."""
    sub = "wandb" if tracking.kind == "wandb" else "tensorboard"
    return str(Path(tracking.dir).absolute()) if tracking.dir else str(Path(run_dir) / sub)


def slime_tracking_args(
    tracking: TrackingConfig,
    names: TrackingNames,
    run_dir: str | Path,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """slime's tracking flags (Appendix A of the slime notes), always as complete flag/value pairs."""
    if tracking.kind == "wandb":
        return [
            "--use-wandb",
            "--wandb-project", names.project,
            "--wandb-group", names.group,
            "--disable-wandb-random-suffix",
            "--wandb-mode", effective_wandb_mode(tracking, environ),
            "--wandb-dir", tracking_dir(tracking, run_dir),
        ]  # fmt: skip
    if tracking.kind == "tensorboard":
        # slime writes its events to $TENSORBOARD_DIR (set by `tracking_env`), which makes its
        # project/experiment-name flags dead weight.
        return ["--use-tensorboard"]
    return []


def tracking_env(
    tracking: TrackingConfig, run_dir: str | Path, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Variables for the job's runtime env; never the key itself (the job inherits it)."""
    if tracking.kind == "wandb":
        mode = effective_wandb_mode(tracking, environ)
        return {"WANDB_MODE": mode, "WANDB_DIR": tracking_dir(tracking, run_dir)}
    if tracking.kind == "tensorboard":
        return {"TENSORBOARD_DIR": tracking_dir(tracking, run_dir)}
    return {}


class RunTracker(Protocol):
    """The launcher's record of one run in the tracking backend."""

    def log_stage(self, name: str, status: str, metrics: Mapping[str, float] | None = None) -> None: ...

    def finish(self, status: str) -> None: ...


# Stage statuses as numbers, so that a dashboard can chart them.
_STATUS_CODES = {"pending": 0, "running": 1, "succeeded": 2, "skipped": 2, "failed": -1, "stopped": -2}


class WandbRunTracker:
    """One wandb run per t3rl run: config + manifest as the run config, stage statuses and metrics as logs."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self._step = 0

    def log_stage(self, name: str, status: str, metrics: Mapping[str, float] | None = None) -> None:
        row: dict[str, float] = {f"stage/{name}/status": _STATUS_CODES.get(status, 0)}
        row.update({f"{name}/{key}": float(value) for key, value in (metrics or {}).items()})
        self._run.log(row, step=self._step)
        self._run.summary[f"stage/{name}"] = status
        self._step += 1

    def finish(self, status: str) -> None:
        self._run.summary["status"] = status
        self._run.finish(exit_code=0 if status == "succeeded" else 1)


def open_tracker(
    tracking: TrackingConfig,
    *,
    experiment: str,
    run_id: str,
    run_dir: str | Path,
    config: Mapping[str, Any],
    manifest: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> RunTracker | None:
    """The launcher's tracker for this run, or None (tracking off, tensorboard, or wandb disabled)."""
    if tracking.kind != "wandb" or tracking.mode == "disabled":
        return None
    import wandb  # lazy: wandb, only when a run opens its tracker

    names = tracking_names(tracking, experiment=experiment, run_id=run_id)
    directory = Path(tracking_dir(tracking, run_dir))
    directory.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=names.project,
        group=names.group,
        name=names.run_name,
        job_type="t3rl",
        dir=str(directory),
        mode=effective_wandb_mode(tracking, environ),
        config={"t3rl": scrub_obj(dict(config)), "manifest": scrub_obj(dict(manifest))},
        # No console copy or code snapshot: the run dir keeps the logs, and a stage may print a secret.
        # No metadata of this process either: wandb records its command line as typed (a literal
        # `++hardware.env_vars.DB_PASS=…`, unmasked) and pip's list of packages (a `git+https://<token>@…`
        # requirement); the masked config and manifest say what ran.
        settings=wandb.Settings(
            console="off", save_code=False, disable_git=True, x_disable_meta=True, x_save_requirements=False
        ),
        reinit="create_new",
    )
    return WandbRunTracker(run)


def stage_metrics(outputs: Mapping[str, str]) -> dict[str, float]:
    """The numbers of a stage's eval summary (`outputs["summary"]`, its "overall" block), if it wrote one."""
    path = outputs.get("summary")
    if not path or not Path(path).exists():
        return {}
    overall = outside_json.read_file(Path(path)).get("overall") or {}
    flat: dict[str, float] = {}
    for key, value in overall.items():
        if isinstance(value, Mapping):
            flat.update({f"{key}.{k}": float(v) for k, v in value.items() if _is_number(v)})
        elif _is_number(value):
            flat[key] = float(value)
    return flat


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class TrackingReporter:
    """Passes the pipeline's progress on to the CLI's reporter and logs each stage to the tracker."""

    def __init__(self, inner: Any, tracker: RunTracker) -> None:
        self.inner = inner
        self.tracker = tracker
        self.status = "succeeded"

    def decisions(self, plan: Any, decisions: list[Any]) -> None:
        self.inner.decisions(plan, decisions)

    def stage_started(self, stage: Any, decision: Any, attempt: int) -> None:
        self.inner.stage_started(stage, decision, attempt)
        self.tracker.log_stage(stage.name, "running")

    def stage_finished(self, stage: Any, result: Any, seconds: float) -> None:
        self.inner.stage_finished(stage, result, seconds)
        metrics = {
            "seconds": seconds,
            **(stage_metrics(stage.outputs) if result.status == "succeeded" else {}),
        }
        self.tracker.log_stage(stage.name, result.status, metrics)
        if result.status != "succeeded":
            self.status = result.status

    def note(self, stage: Any, text: str) -> None:
        self.inner.note(stage, text)


class DeferredTracking:
    """The pipeline's reporter until the run's record is written, then also its tracker's: `open()`
    (called right after the record, `steps.execute`) opens the tracker with the manifest.json that
    attempt wrote. Opened before it, a first attempt's tracker got no manifest and a resume's the
    previous attempt's. A command refused before its record opens no tracker run."""

    def __init__(self, inner: Any, opener: Callable[[], RunTracker | None]) -> None:
        self.inner, self._opener = inner, opener
        self.tracking: TrackingReporter | None = None
        self._opened = False
        self.status = "succeeded"

    def open(self) -> None:
        if not self._opened:
            self._opened = True
            tracker = self._opener()
            self.tracking = None if tracker is None else TrackingReporter(self.inner, tracker)

    @property
    def _to(self) -> Any:
        return self.tracking or self.inner

    def decisions(self, plan: Any, decisions: list[Any]) -> None:
        self._to.decisions(plan, decisions)

    def stage_started(self, stage: Any, decision: Any, attempt: int) -> None:
        self.open()  # a pipeline given no record to write opens it with its first stage
        self._to.stage_started(stage, decision, attempt)

    def stage_finished(self, stage: Any, result: Any, seconds: float) -> None:
        self._to.stage_finished(stage, result, seconds)

    def note(self, stage: Any, text: str) -> None:
        self._to.note(stage, text)

    def finish(self, status: str) -> None:
        if self.tracking is not None:
            self.tracking.tracker.finish(status if status != "succeeded" else self.tracking.status)


@contextmanager
def tracked(
    run: RunConfig, run_dir: Path, config: Mapping[str, Any], reporter: Any, run_id: str | None = None
) -> Iterator[DeferredTracking]:
    """The reporter to run the pipeline with: `reporter`, which also logs to the run's tracker once
    its `open()` was called (after the run's record is written).

    The tracker's run gets the resolved config and the run dir's manifest.json as that attempt wrote it,
    then one record per stage; it is closed with the pipeline's outcome ("stopped" on Ctrl-C, "failed"
    on an error). `run_id`: the run's id (launch.run.rundir.RunDir.id), the tracker's run name unless
    the config names one; the manifest's is read only when it is not given."""

    def opener() -> RunTracker | None:
        manifest_file = run_dir / "manifest.json"
        manifest = outside_json.read_file(manifest_file) if manifest_file.exists() else {}
        return open_tracker(
            run.tracking,
            experiment=run.name,
            run_id=run_id or str(manifest.get("run_id") or run_dir.name),
            run_dir=run_dir,
            config=config,
            manifest=manifest,
        )

    deferred = DeferredTracking(reporter, opener)
    status = "succeeded"
    try:
        yield deferred
    except KeyboardInterrupt:
        status = "stopped"
        raise
    except Exception:
        status = "failed"
        raise
    finally:
        deferred.finish(status)
