"""A sweep point's outcome as its own run dir records it: `sweep.json` is the sweep's index of its
points, written by its launcher, and the point's record (state.json, config.yaml, its outputs' digests)
is the truth it indexes. They part when a run dir is damaged after the sweep recorded it (state.json
deleted, cut short or edited, an output deleted) or when a point ended without its sweep hearing of
it: a resume that trusted `sweep.json` never reran a damaged point and reran a succeeded one, and
`t3rl runs show <sweep dir>` ranked a damaged point best.

A point succeeded when its record says so as a resume reads it: every stage of its config recorded as
succeeded (or skipped), its last pipeline not ended otherwise, each finished stage's outputs still
matching the digests recorded when it finished, and its metric readable (a complete eval summary).
Read with what `t3rl runs` reads (record_files, output_digest): no config is composed, and an output
unchanged since it was hashed is only stat'ed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from launch.run.output_digest import FileHashes, output_damage
from launch.run.record_files import RunDirError, mapping_of_mappings, read_json, read_yaml, stage_record
from launch.run.sweep import IncompleteEval, complete_summary, read_metric
from launch.run.sweep_compare import summary_path
from t3rl_core.records import Record

_DONE = ("succeeded", "skipped")


class PointOutcome(Record):
    """How a point ended by its own record: `succeeded`, else what its record shows instead (`damaged`
    for a record that cannot be read or an output changed since, else a stage's or the pipeline's own
    status) and `error`, what was found, in one line."""

    status: str
    metric: float | None
    error: str | None


def point_outcome(run_dir: str | None, metric_name: str | None, metric: float | None = None) -> PointOutcome:
    """The outcome of the point whose run dir is `run_dir`, scored by `metric_name` ("<eval stage>: <key>",
    read from its eval summary); a metric named without its stage (an Optuna search's) cannot be read
    back, and `metric`, the one recorded, is kept."""
    if run_dir is None:
        return PointOutcome("planned", None, "no run dir recorded")
    path = Path(run_dir)
    try:
        unfinished = _unfinished(path)
    except RunDirError as err:
        return PointOutcome("damaged", None, str(err).splitlines()[0])
    if unfinished is not None:
        status, found = unfinished
        return PointOutcome(status, None, found)
    summary = summary_path(run_dir, metric_name)
    if summary is None:
        return PointOutcome("succeeded", metric, None)
    if not summary.exists():  # an eval that writes no summary scores nothing, as the sweep scores it
        return PointOutcome("succeeded", None, None)
    try:
        value = read_metric(complete_summary(summary), (metric_name or "").rpartition(": ")[2])
    except (IncompleteEval, OSError, ValueError, KeyError) as err:
        return PointOutcome("failed", None, f"no metric: {err}")
    return PointOutcome("succeeded", value, None)


def _unfinished(path: Path) -> tuple[str, str] | None:
    """(status, what was found) when the run dir `path` does not record a finished run; RunDirError
    for a record file that cannot be read."""
    state_file, config = path / "state.json", path / "config.yaml"
    if not state_file.is_file():
        what = f"{state_file} is missing" if path.is_dir() else f"its run dir {path} is missing"
        return "damaged", what
    planned = mapping_of_mappings(config, read_yaml(config, dict), "stages")
    state = read_json(state_file, dict)
    records = mapping_of_mappings(state_file, state, "stages")
    for name in planned:
        if name not in records:
            return "damaged", f"{state_file} has no record of stage {name}"
        record = stage_record(state_file, name, records[name])
        status = record.get("status", "planned")
        if status not in _DONE:
            message = f": {record['message']}" if record.get("message") else ""
            return status, f"{state_file}: stage {name} is {status}{message}"
    pipeline = state.get("pipeline")
    ended = pipeline.get("status") if isinstance(pipeline, dict) else None
    if ended not in (None, "succeeded"):
        return str(ended), f"{state_file}: its last pipeline is {ended}"
    hashes = FileHashes.load(path / "file_hashes.json")
    for name in planned:
        damage = output_damage(path, records[name].get("outputs") or {}, state.get("run_dir"), hashes)
        if damage is not None:
            return "damaged", f"stage {name}: output damaged: {damage}"
    return None


def own_point(point: Mapping[str, Any], metric_name: str | None) -> tuple[dict[str, Any], str | None]:
    """A point of `sweep.json` with its status, metric and error as its own record gives them, and one
    line naming the point, what was found and what a resume does when the two disagree on whether it
    succeeded (None when they agree: `sweep.json` then keeps its own words, `waiting` or a launcher
    gone among them)."""
    recorded = str(point.get("status") or "planned")
    own = point_outcome(point.get("run_dir"), metric_name, point.get("metric"))
    label = f"point {point.get('index')} ({' '.join(point.get('varying') or [])})"
    if recorded == "succeeded" and own.status != "succeeded":
        note = (
            f"{label}: sweep.json says succeeded, but its record says {own.status}: {own.error} "
            "(a resume of the sweep runs it again)"
        )
    elif recorded != "succeeded" and own.status == "succeeded":
        note = f"{label}: sweep.json says {recorded}, but its record says it succeeded (a resume keeps it)"
    elif own.status == "succeeded":
        return {**point, "metric": own.metric}, None
    else:
        return dict(point), None
    return {**point, "status": own.status, "metric": own.metric, "error": own.error}, note
