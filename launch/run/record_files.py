"""Reading a run dir's record files (JSON and YAML t3rl wrote) as what they must be: a file that is
not valid, not UTF-8 text or not of the shape t3rl writes there (a file edited by hand, a copy cut
short) is a `RunDirError` naming it and what to do, never taken as empty and never a traceback further
on. Light on purpose: `t3rl runs` reads records with nothing else of the launcher imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from t3rl_core import outside_json
from t3rl_core.counts import counted
from t3rl_core.yaml_text import safe_load

# What an eval stage's summary is read by when nothing names a metric (a sweep's points, `t3rl runs`, a
# comparison of results): the last eval stage's accuracy over every task.
DEFAULT_METRIC = "overall.accuracy"
# A `t3rl eval` record's manifest says so (`"record": "eval"`): `t3rl runs` shows it as a stage of this name.
EVAL_RECORD = "eval"

HAND_EDITED = "t3rl writes it atomically, so it was changed outside t3rl: restore it or fix it by hand."
_SHAPES = {dict: "a mapping", list: "a list"}

# The files of a run's record that the launcher writes, each atomically: a temporary `.<name>.<random>.tmp`
# beside it until it is renamed over it. A launcher killed in between (SIGKILL, a lost node) leaves that
# temporary file; the next launcher of the dir removes those of these names (a stage's own files, which
# a stage left running may still be writing, are never touched). Declared here, with their readers:
# launch.run.rundir writes them, and a dir holding some of them without its config.yaml is named as a
# run's record missing that file.
RECORD_FILES = (
    "config.yaml", "overrides.yaml", "overrides.history.yaml", "manifest.json", "provenance.json",
    "secret_fingerprints.json", "plan.sh", "state.json", "file_hashes.json",
)  # fmt: skip
STAGE_RECORD_FILES = ("command.sh", "status.json", "outputs.json")


class RunDirError(Exception):
    """A run directory or one of its files cannot be used as it is; `reason`, for a damaged file, is
    what is wrong with it in a few words."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


def not_a_run_dir(path: Path) -> str | None:
    """Why `path` is no run dir `t3rl runs show|diff` can read, or None when it has a record."""
    if (path / "config.yaml").is_file():
        return None
    if not path.exists():
        return f"{path} is not a t3rl run dir: it does not exist ({run_dir_hint(path)})"
    if not path.is_dir():
        return f"{path} is not a t3rl run dir: it is a file ({run_dir_hint(path)})"
    if (path / "sweep.json").is_file():
        return f"{path} is not a t3rl run dir: it is a sweep (`t3rl runs show {path}` lists its points)"
    return f"{path} is not a t3rl run dir (no config.yaml; {run_dir_hint(path)})"


def run_dir_hint(path: Path) -> str:
    """The run dir `path` most likely meant: the same relative path from a directory above this one
    (typed in a subdirectory of where the runs are), the latest run dir in it (`runs/quickstart` holds
    one per run), else the nearest-named run dir beside it (a misspelt timestamp); else where they are
    listed."""
    above = from_a_dir_above(path)
    if above is not None:
        return (
            f"a relative path starts from the current directory, {Path.cwd()}: "
            f"did you mean {above / path}, or to cd {above} first?"
        )
    run = run_dir_around(path)
    if run is not None:
        return f"it is inside the run dir {run}: did you mean {run}?{_stage_hint(path, run)}"
    left = [name for name in RECORD_FILES[1:] if (path / name).is_file()]
    if left:
        # A run's record whose config.yaml is gone (deleted, moved): that file is what is missing.
        kept = "; superseded/ keeps the earlier ones" if (path / "superseded").is_dir() else ""
        return (
            f"it holds a run's record ({', '.join(left[:3])}) without its config.yaml, the config the run "
            f"ran with: restore {path / 'config.yaml'}{kept}"
        )
    inside = sorted(_run_dirs(path))
    if inside and (path / "sweep.md").is_file():
        # A sweep's dir without its record: the file missing is named, not only a point to look at.
        record = path / "sweep.json"
        what = "is not a file" if record.exists() or record.is_symlink() else "is missing"
        return (
            f"it is a sweep's dir whose record, {record}, {what}: restore it; each point resumes alone, "
            f"e.g. t3rl run --run-dir {inside[0]}"
        )
    if inside:
        return f"it holds run dirs; the latest is {inside[-1]}"
    # a runs dir (`runs`, paths.runs_dir): its run dirs are EXPERIMENT/TIMESTAMP below it
    below = sorted((d for child in _subdirs(path) for d in _run_dirs(child)), key=lambda d: (d.name, str(d)))
    if below:
        return (
            f"it is a runs dir, whose run dirs are two levels below it (EXPERIMENT/TIMESTAMP); the latest is "
            f"{below[-1]}; `t3rl runs --runs-dir {path}` lists them"
        )
    import difflib  # lazy: only for a path that is no run dir

    beside = [str(d) for d in _run_dirs(path.parent)]
    near = difflib.get_close_matches(str(path), beside, n=1, cutoff=0.8)
    return f"did you mean {near[0]}?" if near else "`t3rl runs` lists the run dirs"


def run_dir_around(path: Path) -> Path | None:
    """The run dir `path` lies inside (a stage's dir, its log, an output copied from the terminal: the
    run dir is the path meant), or None. As typed: relative stays relative."""
    for parent in path.parents:
        if (
            parent != Path(".")
            and (parent / "config.yaml").is_file()
            and (parent / "manifest.json").is_file()
        ):
            return parent
    return None


def _stage_hint(path: Path, run: Path) -> str:
    """` (--only S runs stage S alone)` for a path under the run's stages/S."""
    parts = path.relative_to(run).parts
    if len(parts) >= 2 and parts[0] == "stages":
        return f" (--only {parts[1]} runs stage {parts[1]} alone)"
    return ""


# A run dir's record, and a sweep dir's.
_RECORDS = ("config.yaml", "sweep.json")


def from_a_dir_above(path: Path) -> Path | None:
    """The nearest directory above the current one from which a relative `path` that is nothing here is
    a run or sweep dir or holds run dirs (`runs/quickstart/<ts>` typed in the checkout's docs/); None
    when it is absolute, exists here or nowhere above."""
    if path.is_absolute() or path.exists():
        return None
    try:
        here = Path.cwd()
    except OSError:  # the current directory was deleted: nothing is above it
        return None
    for above in here.parents:
        candidate = above / path
        if any((candidate / name).is_file() for name in _RECORDS) or _run_dirs(candidate):
            return above
    return None


def _subdirs(folder: Path) -> list[Path]:
    try:
        return [child for child in folder.iterdir() if child.is_dir()]
    except OSError:
        return []


def _run_dirs(folder: Path) -> list[Path]:
    try:
        return [child for child in folder.iterdir() if (child / "config.yaml").is_file()]
    except OSError:
        return []


def read_json(path: Path, shape: type = object, advice: str = "") -> Any:
    """The JSON in `path`, which must be a `shape` (dict, list; any by default); `advice` ends the
    message of a corrupt file."""
    text = _text(path)
    try:
        # Under the limit of JSON from outside: a record edited by hand (or damaged) into text nested
        # past Python's recursion raised RecursionError out of a resume, `t3rl runs` and sweeps.
        data = outside_json.loads(text, "the record")
    except json.JSONDecodeError as err:
        where = (
            ""
            if isinstance(err, outside_json.OutsideJsonError)
            else f" at line {err.lineno}, column {err.colno}"
        )
        raise RunDirError(
            f"{path} is corrupt ({err.msg}{where}; {counted(len(text), 'byte')}). " + HAND_EDITED + advice
        ) from err
    return _shaped(path, data, shape)


def read_yaml(path: Path, shape: type = object) -> Any:
    """The YAML in `path` (empty: None, or an empty `shape`), which must be a `shape`."""
    data = yaml_data(_text(path), path)
    if data is None and shape is not object:
        return shape()
    return _shaped(path, data, shape)


def yaml_data(text: str, path: Path) -> Any:
    """The YAML `text` of the record file `path`: not valid YAML, or nested deeper than
    `outside_json.MAX_DEPTH` (a file damaged into `[[[…`: PyYAML's reader, a dump of it and every walk
    of it recurse once a level, and raised RecursionError out of a resume, `t3rl plan --run-dir` and
    `t3rl runs diff`), is a `RunDirError` naming it."""
    try:
        data = safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        reason = f"not valid YAML{where}"
        raise RunDirError(f"{path} is corrupt ({reason}). {HAND_EDITED}", reason) from err
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or _nests_deeper(data, outside_json.MAX_DEPTH):
        reason = f"nested more than {outside_json.MAX_DEPTH} levels deep"
        raise RunDirError(f"{path} is corrupt ({reason}). {HAND_EDITED}", reason)
    return data


_TOO_DEEP = object()


def _nests_deeper(data: Any, limit: int) -> bool:
    """Whether lists and mappings in `data` nest more than `limit` levels, found without recursion (a
    node met again, a YAML alias, is walked once)."""
    level, seen = [data], set()
    for _ in range(limit):
        inner: list[Any] = []
        for node in level:
            if isinstance(node, dict | list) and id(node) not in seen:
                seen.add(id(node))
                inner.extend(node.values() if isinstance(node, dict) else node)
        if not inner:
            return False
        level = inner
    return any(isinstance(node, dict | list) for node in level)


def read_sweep(sweep_dir: Path) -> dict[str, Any]:
    """A sweep's `sweep.json`: its name and points (mappings, each with its index), as t3rl writes it."""
    path = sweep_dir / "sweep.json"
    data = read_json(path, dict)
    points = data.get("points", [])
    if not (
        isinstance(data.get("name"), str)
        and isinstance(points, list)
        and all(isinstance(p, dict) and isinstance(p.get("index"), int) for p in points)
    ):
        raise RunDirError(f"{path} is corrupt (not the name and indexed points t3rl writes). {HAND_EDITED}")
    # Each point's run dir as it is now: a sweep dir moved or copied elsewhere resumes and shows its
    # own points, not those left where it was written (`sweep_dir` names that place).
    was, here = data.get("sweep_dir"), str(sweep_dir.resolve())
    for point in points:
        if isinstance(point.get("run_dir"), str):
            point["run_dir"] = moved_below(point["run_dir"], was, here)
    return data


def moved_below(path: str, was: object, root: str) -> str:
    """`path` with the dir `was` it was recorded below replaced by `root`, the dir as it is now (a
    record moved or copied elsewhere); other paths, and a record that names no `was`, as they are."""
    if not isinstance(was, str) or not was or was == root:
        return path
    return root + path[len(was) :] if path == was or path.startswith(was + "/") else path


# What each field of a stage's record in state.json holds (launch.run.rundir.StageRecord, written by
# t3rl): one of another type (a file edited by hand, damaged) is named here with its file and stage,
# by the resume and `t3rl runs show` alike; read on, `"outputs": null` ended both in a traceback.
STAGE_STATUSES = ("running", "succeeded", "failed", "stopped", "skipped")
_NONE = type(None)
STAGE_FIELDS: dict[str, tuple[type, ...]] = {
    "status": (str,),
    "fingerprint": (str,),
    "run_id": (str,),
    "upstream": (dict,),  # stage → the run id it read (text)
    "attempts": (int,),
    "started_at": (str, _NONE),
    "finished_at": (str, _NONE),
    "returncode": (int, _NONE),
    "message": (str,),
    "handle": (dict,),
    "outputs": (dict,),  # path → digest (text), or null for an output that was missing
    "code": (dict, _NONE),
    "environ": (dict, _NONE),  # variable → its value (text)
}
_TEXT_VALUED = ("upstream", "outputs", "environ")
_KINDS = {str: "text", int: "a whole number", dict: "a mapping", _NONE: "null"}


def stage_record(path: Path, name: str, record: Any) -> Any:
    """`record`, the record of stage `name` in the state file `path`, when each field t3rl writes holds
    what t3rl writes there (fields it does not know are left to the reader); else a `RunDirError`."""
    if not isinstance(record, dict):
        problem = f"is {_SHAPES.get(type(record), f'a {type(record).__name__}')}, not a mapping"
    else:
        problem = next(filter(None, (_field_problem(k, v) for k, v in record.items())), None)
    if problem is None:
        return record
    raise RunDirError(
        f"{path}: the record of stage '{name}' {problem}. {HAND_EDITED} Deleting the file makes the next "
        "run start every stage over."
    )


def _field_problem(field: str, value: Any) -> str | None:
    kinds = STAGE_FIELDS.get(field)
    if kinds is None:
        return None
    # bool is an int to isinstance: `"attempts": true` is no count.
    fits = isinstance(value, kinds) and not isinstance(value, bool)
    if fits and field == "status" and value not in STAGE_STATUSES:
        return f"has status {value!r}, not one t3rl writes ({', '.join(STAGE_STATUSES)})"
    if fits and field in _TEXT_VALUED and isinstance(value, dict):  # (`environ` may be null)
        fits = all(isinstance(v, str | _NONE) for v in value.values())
        if not fits:
            return f"holds `{field}` values that are not text"
    if fits:
        return None
    wanted = " or ".join(_KINDS[kind] for kind in kinds)
    return f"holds `{field}`: {_shown(value)}, where t3rl writes {wanted}"


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "…"


def mapping_of_mappings(path: Path, data: Any, key: str) -> dict[str, dict[str, Any]]:
    """`data[key]` as t3rl writes it: names to mappings (absent: empty)."""
    value = data.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise RunDirError(f"{path}: `{key}` is not a mapping of names to records. {HAND_EDITED}")
    return value


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        reason = f"not UTF-8 text: byte {err.start}"
        raise RunDirError(f"{path} is corrupt ({reason}). {HAND_EDITED}", reason) from err
    except OSError as err:
        raise RunDirError(f"cannot read {path}: {err.strerror or err}{_unreadable_fix(path, err)}") from err


def _unreadable_fix(path: Path, err: OSError) -> str:
    """The smallest fix of a record file that cannot be read for what it is, not for what it says."""
    if isinstance(err, IsADirectoryError):
        return f" (t3rl keeps a file there): move the directory away and restore {path.name}"
    if isinstance(err, PermissionError):
        return f": make it readable (chmod u+r {path})"
    return ""


def _shaped(path: Path, data: Any, shape: type) -> Any:
    if not isinstance(data, shape):
        found = _SHAPES.get(type(data), f"a {type(data).__name__}")
        raise RunDirError(f"{path} is corrupt ({found} where t3rl writes {_SHAPES[shape]}). {HAND_EDITED}")
    return data
