"""A sweep run again with more values in its swept lists extends the sweep it grew from.

`t3rl run -m +experiment=X reward=progress,binary`, then `… reward=progress,binary,shaped`: the second
command runs the new point only, in the first sweep's dir, and its table, sweep.md and sweep.png hold
all three points, compared as one sweep. The earlier points run again through their own pipelines,
where an unchanged point is cached stage by stage (nothing runs) and a point whose config or code
changed since reruns what changed: a point's result is never kept from a config that is not the
command's. A sweep is extended when every point it has is a point of the new command (the same
overrides, the same config dirs) and the new command has more; the newest such sweep under
`<runs_dir>/<name>/` is taken. The same command again (no new point) starts a new sweep as before;
so does one another launcher is running, a planned one (`t3rl plan -m`), or an Optuna search.

Overrides are compared by what they mean, not as typed (`override_meaning`): in any order, a number by
its value (`lr=1e-6` is `lr=0.000001`), and a relative path of a field the schema declares a path
against the directory its command ran in (`paths.runs_dir=../runs` typed in `sub/` is
`paths.runs_dir=runs` typed above it). As text, each of those started a new sweep beside the first.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Collection, Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from launch.run.record_files import RunDirError
from launch.run.rundir import RunDir, started_in
from launch.run.sweep import Point, PointRecord, SweepSummary
from launch.run.sweep_liveness import launcher_alive


def _dirs(config_dirs: Sequence[str], working_dir: str | Path) -> list[str]:
    return [str((Path(working_dir) / d).resolve()) for d in config_dirs]


# The str kinds whose value is a local path, resolved against the directory the command ran in.
PATH_KINDS = ("path", "output dir", "upload dir", "model dir")
# A number as an override writes it (Hydra's int and float literals; a sign, `_` between digits).
_NUMBER = re.compile(r"[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?")

Meaning = frozenset[tuple[str, str]]


def override_meaning(override: str, working_dir: str | Path, path_keys: Collection[str]) -> tuple[str, str]:
    """(the key with its +/~ prefix, the value as it reads): a number by its exact value, a relative
    path of one of `path_keys` resolved against `working_dir`; anything else as typed."""
    key, equals, value = override.partition("=")
    if not equals:
        return key, value
    if _NUMBER.fullmatch(value):
        try:
            return key, str(Decimal(value.replace("_", "")).normalize())
        except InvalidOperation:
            return key, value
    if key.lstrip("+~") in path_keys and value and "${" not in value:
        return key, str((Path(working_dir) / Path(value).expanduser()).resolve())
    return key, value


def point_meaning(overrides: Sequence[str], working_dir: str | Path, path_keys: Collection[str]) -> Meaning:
    """A point's overrides as what they mean, in no order."""
    return frozenset(override_meaning(o, working_dir, path_keys) for o in overrides)


def earlier_meanings(summary: SweepSummary, path_keys: Collection[str]) -> dict[Meaning, int]:
    """Each point of an earlier sweep by what its overrides meant in the directory it ran from (its
    manifest's working_dir; this one's when it records none)."""
    found = {}
    for point in summary.points.values():
        working_dir: str | Path = Path.cwd()
        if point.run_dir is not None:
            with contextlib.suppress(RunDirError, OSError):
                working_dir = started_in(RunDir(Path(point.run_dir)).read_manifest()).recorded or working_dir
        found[point_meaning(point.overrides, working_dir, path_keys)] = point.index
    return found


def extendable(
    parent: Path, points: Sequence[Point], config_dirs: Sequence[str], path_keys: Collection[str] = ()
) -> SweepSummary | None:
    """The newest sweep under `parent` that `points` extend (its record loaded), or None; `path_keys`
    are the dotted keys of the fields the schema declares local paths."""
    wanted = {point_meaning(p.overrides, Path.cwd(), path_keys) for p in points}
    mine = _dirs(config_dirs, Path.cwd())
    candidates = sorted(parent.glob("sweep-*/sweep.json"), key=lambda f: f.stat().st_mtime, reverse=True)
    for record in candidates:
        try:
            summary = SweepSummary.load(record.parent)
        except (RunDirError, OSError, KeyError, ValueError):
            continue
        have = set(earlier_meanings(summary, path_keys))
        if summary.record != "run" or summary.search is not None or not have or not have < wanted:
            continue
        if launcher_alive(summary.sweep_dir) or not _same_config_dirs(summary, mine):
            continue
        return summary
    return None


def _same_config_dirs(summary: SweepSummary, mine: list[str]) -> bool:
    """Every earlier point was composed from the config dirs given now."""
    for point in summary.points.values():
        if point.run_dir is None:
            return False
        try:
            manifest = RunDir(Path(point.run_dir)).read_manifest()
        except (RunDirError, OSError):
            return False
        stored = manifest.get("config_dirs") or []
        if _dirs(stored, started_in(manifest).recorded or Path.cwd()) != mine:
            return False
    return True


def renumbered(
    points: Sequence[Point], earlier: SweepSummary, path_keys: Collection[str] = ()
) -> tuple[list[Point], list[Point]]:
    """`points` with the earlier sweep's index for each point it has (by what its overrides mean) and
    the next free ones for the rest (in the command's order); and the new ones alone."""
    known = earlier_meanings(earlier, path_keys)
    following = max(earlier.points) + 1
    every, new = [], []
    for point in points:
        index = known.get(point_meaning(point.overrides, Path.cwd(), path_keys))
        if index is None:
            index, following = following, following + 1
            new.append(replace(point, index=index))
        every.append(replace(point, index=index))
    return every, new


def extending_command(summary: SweepSummary, given: Sequence[str]) -> str | None:
    """The sweep's own command line with `given` in it, when one of `given` sweeps a list (`seed=1,2,3`,
    typed after `t3rl run --run-dir <sweep dir>` to add a point): that line extends this sweep. None
    when none of `given` sweeps (a change of the points, which each takes alone)."""
    from launch.config.compose import parse_overrides  # lazy: Hydra, only for overrides given to a sweep

    typed = dict(zip(given, parse_overrides(given), strict=True))
    if not any(o.is_sweep_override() for o in typed.values()):
        return None
    mine = {o.get_key_element(): text for text, o in typed.items()}
    points = [summary.points[i] for i in sorted(summary.points)]
    line: dict[str, str] = {}
    for point in points:
        for text, override in zip(point.overrides, parse_overrides(point.overrides), strict=True):
            key = override.get_key_element()
            if key in mine:
                line[key] = mine[key]
            elif "=" not in text:  # `~key`: deleted in every point
                line[key] = text
            else:  # the values the sweep's points took, in their order: its list
                was = line.get(key)
                value = text.partition("=")[2]
                listed = [] if was is None else was.partition("=")[2].split(",")
                line[key] = f"{text.partition('=')[0]}={','.join(dict.fromkeys([*listed, value]))}"
    line.update({key: text for key, text in mine.items() if key not in line})
    manifest = _a_points_manifest(points)
    dirs = [f"--config-dir={d}" for d in manifest.get("config_dirs") or []]
    where = started_in(manifest).recorded
    command = shlex.join(["t3rl", "run", "-m", *line.values(), *dirs])
    return f"cd {shlex.quote(str(where))} && {command}" if where and Path(where) != Path.cwd() else command


def _a_points_manifest(points: Sequence[PointRecord]) -> dict[str, Any]:
    for point in points:
        if point.run_dir is not None:
            with contextlib.suppress(RunDirError, OSError):
                return RunDir(Path(point.run_dir)).read_manifest()
    return {}
