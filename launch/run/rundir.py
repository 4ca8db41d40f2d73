"""The run directory: what a user opens after a run, and the state a resumed run continues from.

    <run dir>/
      config.yaml       the resolved config            overrides.yaml   the overrides in force
      overrides.history.yaml          per `t3rl run` of the dir: the overrides given, the ones in force
      manifest.json     git sha + dirty flag, package versions, launcher host, planned topology, seeds
      plan.sh           every stage's commands in order, runnable by hand
      state.json        per stage: status, command fingerprint, run id, upstream run ids (the resume state)
      file_hashes.json  sha256 of each output file by stat, so a resume re-reads only changed files
      runtime/<stage>.yaml            the runtime config a stage reads (slime's --custom-config-path)
      stages/<name>/command.sh        exactly what the stage runs
      stages/<name>/log.txt           its output (appended per attempt)
      stages/<name>/status.json       its record (a copy of its state.json entry)
      stages/<name>/outputs.json      its output paths
      superseded/<name>.<n>/          a stage dir moved aside because its command or inputs changed

Every write is atomic (temp file, then os.replace), so a reader sees the old file or the new one,
never half of one, and durable: each record file is fsynced (file and directory) before t3rl goes on
(`launch.files.write_record`, the one writer of a record). A file that still fails to parse (edited
by hand, disk trouble) is reported with its path and what to do; it is never taken as "no state".
"""

from __future__ import annotations

import contextlib
import copy
import os
import platform
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml

from launch.config.secrets import mask_overrides, scrub_obj, scrub_text
from launch.files import write_record, write_record_json
from launch.run.output_digest import rerooted
from launch.run.record_files import (
    HAND_EDITED,
    RECORD_FILES,
    STAGE_RECORD_FILES,
    RunDirError,
    read_json,
    read_yaml,
    stage_record,
)
from t3rl_core.atomic_files import atomic_copy
from t3rl_core.installed import package_versions
from t3rl_core.records import Record
from t3rl_core.yaml_text import safe_load

StageStatus = Literal["running", "succeeded", "failed", "stopped", "skipped"]
STATE_VERSION = 1


_RECORD_FIELDS = (
    "status", "fingerprint", "run_id", "upstream", "attempts", "started_at", "finished_at", "returncode",
    "message", "handle", "outputs", "code", "environ",
)  # fmt: skip


# A mapping field left out gets a new empty dict (a given None stays None, as with a dataclass's factory).
_FRESH: Any = object()


# StageRecord and RunState are plain classes, not dataclasses: a cold `t3rl plan` imports this module, and
# a dataclass compiles its methods from text as its class is created (~3.7 M and ~1.2 M instructions).
class StageRecord:
    """What happened to one stage, as kept in state.json."""

    def __init__(
        self,
        status: StageStatus,
        # Stage.fingerprint() of the command that produced this record.
        fingerprint: str,
        # Identity of the stage's current output: a fresh id per execution, "complete:<fingerprint>" when
        # an existing complete output was adopted.
        run_id: str,
        # run_id of each stage this one reads from (Stage.reads_from) when it ran; a change there makes
        # this output stale. (Records written before that list every earlier stage.)
        upstream: dict[str, str] = _FRESH,
        attempts: int = 0,
        started_at: str | None = None,
        finished_at: str | None = None,
        returncode: int | None = None,
        message: str = "",
        # What the executor started (process group, job id), to stop it if t3rl dies.
        handle: dict[str, Any] = _FRESH,
        # Digest of each declared output (Stage.verify and outputs.json) when the stage finished
        # (launch.run.output_digest); a resume skips the stage only while they all still match.
        outputs: dict[str, str | None] = _FRESH,
        # The t3rl checkout's git state (sha, dirty) its command was started with: the manifest's of the
        # attempt that ran it (a later attempt that keeps its output rewrites the manifest, not this).
        code: dict[str, Any] | None = None,
        # The variables of `launch.run.inherited_env.INHERITED` set when its command started (None: a
        # record of a t3rl before it): a resume keeping the output names those that changed since.
        environ: dict[str, str] | None = None,
    ) -> None:
        self.status, self.fingerprint, self.run_id = status, fingerprint, run_id
        self.upstream = {} if upstream is _FRESH else upstream
        self.attempts, self.started_at, self.finished_at = attempts, started_at, finished_at
        self.returncode, self.message = returncode, message
        self.handle = {} if handle is _FRESH else handle
        self.outputs = {} if outputs is _FRESH else outputs
        self.code, self.environ = code, environ

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _RECORD_FIELDS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _RECORD_FIELDS)
        return f"{type(self).__qualname__}({fields})"

    def as_dict(self) -> dict[str, Any]:
        """Each field by name, its mappings copied (what `dataclasses.asdict` gave)."""
        return {name: copy.deepcopy(getattr(self, name)) for name in _RECORD_FIELDS}

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any], path: Path) -> StageRecord:
        try:
            return cls(**stage_record(path, name, data))
        except TypeError as err:
            raise RunDirError(f"{path}: the record of stage '{name}' is malformed ({err})") from err


class RunState:
    """state.json: one record per stage that ever started or was skipped, and the last pipeline's own
    record (`pipeline`: status running|succeeded|failed|stopped, started_at, finished_at, message). A
    pipeline stops between stages too (Ctrl-C while an output is hashed, the reader of its output gone
    after a stage's line): no stage record says so then, the pipeline's does."""

    def __init__(
        self, stages: dict[str, StageRecord] = _FRESH, pipeline: dict[str, Any] | None = None
    ) -> None:
        self.stages = {} if stages is _FRESH else stages
        self.pipeline = pipeline
        # The run dir state.json was last written in (its `run_dir`; None for a new state): another one
        # than the dir read means the dir was moved or copied since.
        self.written_in: str | None = None

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.stages, self.pipeline) == (other.stages, other.pipeline)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        pipeline = "" if self.pipeline is None else f", pipeline={self.pipeline!r}"
        return f"{type(self).__qualname__}(stages={self.stages!r}{pipeline})"

    def to_dict(self, root: Path | None = None) -> dict[str, Any]:
        """As state.json holds it; `root`: the run dir it is written in (its outputs' paths are below it,
        and a resume of the dir moved elsewhere finds them below the new one)."""
        where = {} if root is None else {"run_dir": str(root)}
        pipeline = {} if self.pipeline is None else {"pipeline": dict(self.pipeline)}
        stages = {k: v.as_dict() for k, v in self.stages.items()}
        return {"version": STATE_VERSION, **where, "stages": stages, **pipeline}

    @classmethod
    def from_dict(cls, data: Any, path: Path) -> RunState:
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(version, int) and version != STATE_VERSION:
            raise RunDirError(
                f"{path} was written by another t3rl (state format {version}; this t3rl "
                f"{package_versions().get('t3rl') or ''} reads format {STATE_VERSION}): resume it with the "
                "t3rl that wrote it (manifest.json names its t3rl_version), or start a new run"
            )
        if not isinstance(data, dict) or version != STATE_VERSION or not isinstance(data.get("stages"), dict):
            raise RunDirError(
                f"{path} is corrupt (not the t3rl state of format {STATE_VERSION}: a mapping of its "
                f"`version` and `stages`): {HAND_EDITED} Deleting it makes the next run start every stage "
                "over."
            )
        stages = {k: StageRecord.from_dict(k, v, path) for k, v in data["stages"].items()}
        for record in stages.values():
            record.outputs = rerooted(record.outputs, data.get("run_dir"), path.parent)
        pipeline = data.get("pipeline")
        state = cls(stages, dict(pipeline) if isinstance(pipeline, dict) else None)
        written_in = data.get("run_dir")
        state.written_in = written_in if isinstance(written_in, str) else None
        return state


def now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def stamp_now() -> str:
    """The timestamp a new run dir is named by."""
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def record_path(parent: Path, name: str, stamp: str) -> Path:
    """Where a run (or a plan, a sweep: `stamp` `sweep-<time>`) named `name` started at `stamp` is recorded
    under `parent` (a runs or plans dir), before the suffix `fresh_dir` gives a name already taken: the
    one formula of a record's path, for the dir made and the one a plan is built for before it is."""
    return parent / name / stamp


def fresh_dir(parent: Path, name: str) -> Path:
    """`<parent>/<name>`, made now, suffixed -1, -2, … if it exists: two commands started in the same
    second never share a record."""
    parent.mkdir(parents=True, exist_ok=True)
    candidate, n = parent / name, 0
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            n += 1
            candidate = parent / f"{name}-{n}"


class RunDir:
    """One run's directory."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        # The ancestors `new` created for this dir (the runs dir itself on a first run), deepest first.
        self.created: list[Path] = []

    # ------------------------------------------------------------------------------ creation

    @classmethod
    def new(cls, runs_dir: Path, name: str, stamp: str | None = None) -> RunDir:
        """A fresh `<runs_dir>/<name>/<timestamp>` (suffixed -1, -2, … if that exists)."""
        path = record_path(runs_dir, name, stamp or stamp_now())
        parent = path.parent
        created = [p for p in (parent, *parent.parents) if not p.exists()]
        run_dir = cls(fresh_dir(parent, path.name))
        run_dir.created = created
        return run_dir

    @property
    def id(self) -> str:
        """`<name>-<timestamp>`: unique among the runs under one runs dir (the tracking run name). Given
        once: a recorded dir keeps the id its manifest names, wherever it was moved or copied since (the
        id is in a train stage's command, and is its tracker's run: one run, one name)."""
        recorded = self.read_manifest().get("run_id") if (self.path / "manifest.json").is_file() else None
        if isinstance(recorded, str) and recorded:
            return recorded
        return f"{self.path.parent.name}-{self.path.name}"

    def remove_if_empty(self) -> None:
        """Undo `new` when nothing was written (e.g. the config failed to plan), including the
        `<runs_dir>/<name>/` (and the runs dir) it made if no other run lives there."""
        with contextlib.suppress(OSError):
            self.path.rmdir()
            for directory in self.created:
                directory.rmdir()

    def discard(self) -> None:
        """Undo `new` for a run refused or stopped before its record was whole (a plan: before every
        stage's files were written): the dir with what it holds, and the ancestors `new` created if no
        other run lives there. Half a record is never left to be taken for a run or a plan."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            for directory in self.created:
                directory.rmdir()

    # ------------------------------------------------------------------------------ files

    @property
    def state_file(self) -> Path:
        return self.path / "state.json"

    @property
    def file_hashes_file(self) -> Path:
        """The sha256 of every output file with the stat it was hashed at (`FileHashes`)."""
        return self.path / "file_hashes.json"

    def stage_dir(self, name: str) -> Path:
        return self.path / "stages" / name

    def exists(self) -> bool:
        return (self.path / "config.yaml").exists()

    def write_config(self, config_yaml: str, overrides: list[str]) -> None:
        """config.yaml and overrides.yaml; a previous, different pair is kept under superseded/."""
        config_file, overrides_file = self.path / "config.yaml", self.path / "overrides.yaml"
        overrides_yaml = yaml.safe_dump(mask_overrides(overrides))
        if config_file.exists() and config_file.read_bytes() != config_yaml.encode():
            keep = self.path / "superseded"
            keep.mkdir(exist_ok=True)
            n = 1
            while (keep / f"config.{n}.yaml").exists():
                n += 1
            # Whole or not at all: a copy cut short (a full disk) kept half a config as the previous one.
            if overrides_file.exists():
                atomic_copy(overrides_file, keep / f"overrides.{n}.yaml", durable=True)
            atomic_copy(config_file, keep / f"config.{n}.yaml", durable=True)
        write_record(config_file, config_yaml)
        write_record(overrides_file, overrides_yaml)

    def read_overrides(self) -> list[str]:
        path = self.path / "overrides.yaml"
        if not path.exists() and not path.is_symlink():
            raise RunDirError(f"{path} is missing: {self._overrides_fix()}")
        # Empty is no list: t3rl writes `[]` for none, and a resume without the run's overrides would
        # compose another config.
        data = read_yaml(path)
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise RunDirError(
                f"{path} is corrupt (not the list of override strings t3rl writes): {HAND_EDITED}"
            )
        # Each one t3rl wrote is KEY=VALUE or ~KEY: another (the file cut short: `- +experi`) was
        # composed as typed, and refused as an override given on the command line.
        cut = next((x for x in data if "=" not in x and not x.startswith("~")), None)
        if cut is not None:
            raise RunDirError(f"{path} is corrupt ({cut!r} is no override KEY=VALUE): {HAND_EDITED}")
        return data

    def _overrides_fix(self) -> str:
        """How to restore overrides.yaml: the overrides its history recorded in force last, if readable."""
        try:
            last = self.read_history()[-1].get("overrides")
        except (RunDirError, IndexError, AttributeError):
            last = None
        if isinstance(last, list) and last and all(isinstance(x, str) for x in last):
            return f"restore it; the last attempt ran with {' '.join(last)} ({self.history_file.name})"
        return "restore it (the list of overrides the run was started with)"

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        write_record_json(self.path / "manifest.json", scrub_obj(dict(manifest)))

    def read_manifest(self) -> dict[str, Any]:
        path = self.path / "manifest.json"
        return read_json(path, dict) if path.exists() else {}

    def is_plan(self) -> bool:
        """Written by `t3rl plan` (a preview, never executed), not by `t3rl run`."""
        return self.read_manifest().get("record") == "plan"

    @property
    def history_file(self) -> Path:
        return self.path / "overrides.history.yaml"

    def read_history(self) -> list[dict[str, Any]]:
        """One entry per `t3rl run` of this dir: attempt, time, the overrides given, the ones in force."""
        if not self.history_file.exists():
            return []
        data = read_yaml(self.history_file)
        if not isinstance(data, list):
            raise RunDirError(
                f"{self.history_file} is corrupt (not the list of attempts t3rl writes): {HAND_EDITED} "
                "Deleting it starts the history anew from overrides.yaml."
            )
        return data

    def append_history(self, given: list[str], overrides: list[str]) -> int:
        """Record one more `t3rl run` of this dir (before its overrides.yaml is rewritten); its attempt
        number (1 for a new run)."""
        history = self.read_history()
        if not history and (self.path / "overrides.yaml").exists():
            # A run recorded before histories were kept: its overrides are its first attempt's.
            started = self.read_manifest().get("created_at")
            stored = self.read_overrides()
            history.append({"attempt": 1, "at": started, "given": stored, "overrides": stored})
        attempt = len(history) + 1
        history.append(
            {
                "attempt": attempt,
                "at": now(),
                "given": mask_overrides(given),
                "overrides": mask_overrides(overrides),
            }
        )
        write_record(self.history_file, yaml.safe_dump(history, sort_keys=False))
        return attempt

    def write_files(self, files: Mapping[str, str]) -> None:
        """Files the stages read, by run-dir-relative path."""
        for rel, text in files.items():
            write_record(self.path / rel, _scrub_file(rel, text))

    def write_plan_script(self, text: str) -> None:
        path = self.path / "plan.sh"
        write_record(path, text)
        path.chmod(0o755)

    def write_stage_command(self, name: str, script: str) -> Path:
        path = self.stage_dir(name) / "command.sh"
        # Secrets reach jobs by environment (`${NAME}` references); a literal value is masked, never kept.
        write_record(path, "#!/usr/bin/env bash\n" + scrub_text(script))
        path.chmod(0o755)
        return path

    def write_stage_outputs(self, name: str, outputs: Mapping[str, str]) -> None:
        write_record_json(self.stage_dir(name) / "outputs.json", dict(outputs))

    # ------------------------------------------------------------------------------ state

    def load_state(self) -> RunState:
        """The saved state; empty only when no state file exists (never for an unreadable one)."""
        if not self.state_file.exists():
            return RunState()
        advice = " Deleting it makes the next run start every stage over."
        return RunState.from_dict(read_json(self.state_file, dict, advice), self.state_file)

    def save_state(self, state: RunState) -> None:
        write_record_json(self.state_file, state.to_dict(self.path))

    def pipeline_started(self, state: RunState) -> None:
        """Record that a pipeline runs the dir's stages now (`t3rl runs`: running while it holds the
        lock, interrupted once it is gone without recording its end)."""
        state.pipeline = {"status": "running", "started_at": now(), "finished_at": None, "message": ""}
        self.save_state(state)

    def pipeline_ended(self, state: RunState, status: str, message: str = "") -> None:
        """Record how the pipeline ended: succeeded, failed or stopped, with why."""
        started = (state.pipeline or {}).get("started_at")
        state.pipeline = {"status": status, "started_at": started, "finished_at": now(), "message": message}
        self.save_state(state)

    def record(self, state: RunState, name: str, record: StageRecord) -> None:
        """Set a stage's record and persist it (state.json first: it is the source of truth)."""
        state.stages[name] = record
        self.save_state(state)
        write_record_json(self.stage_dir(name) / "status.json", {"stage": name, **record.as_dict()})

    def remove_stale_temporaries(self) -> list[Path]:
        """The temporary files a killed launcher left beside the record's files (RECORD_FILES, each
        stage's STAGE_RECORD_FILES, runtime/, the previous configs kept under superseded/), removed;
        call only while holding the dir's lock."""
        places = [(self.path, RECORD_FILES), (self.path / "runtime", None)]
        places += [(self.path / "superseded", ("config", "overrides"))]
        places += [(stage, STAGE_RECORD_FILES) for stage in sorted((self.path / "stages").glob("*/"))]
        removed = []
        for directory, names in places:
            for tmp in directory.glob(".*.tmp"):
                if names is None or any(tmp.name.startswith(f".{name}.") for name in names):
                    with contextlib.suppress(FileNotFoundError):
                        tmp.unlink()
                        removed.append(tmp)
        return removed

    def supersede(self, name: str, files: Iterable[str] = ()) -> Path | None:
        """Move a stale stage dir aside to superseded/<name>.<n>, with a copy of the config files it
        read (they are about to be rewritten); nothing is deleted."""
        src = self.stage_dir(name)
        if not src.exists():
            return None
        target_dir = self.path / "superseded"
        target_dir.mkdir(exist_ok=True)
        n = 1
        while (target_dir / f"{name}.{n}").exists():
            n += 1
        target = target_dir / f"{name}.{n}"
        shutil.move(str(src), str(target))
        for file in map(Path, files):
            if file.exists():
                (target / "runtime").mkdir(exist_ok=True)
                atomic_copy(file, target / "runtime" / file.name, durable=True)
        return target


# ------------------------------------------------------------------------------------------ manifest


def git_state(repo: Path) -> dict[str, Any]:
    """The commit of the t3rl checkout and whether tracked files differ from it (None outside git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    # One git process for both facts (every plan and run records them): porcelain v2's header names the
    # commit (`rev-parse HEAD`'s), its other lines are the changed tracked files (v1's, one a path).
    both = git("status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=no")
    if both is not None:
        lines = both.splitlines()
        oid = next((line[len(_OID) :] for line in lines if line.startswith(_OID)), None)
        if oid == "(initial)":  # no commit yet: `rev-parse HEAD` fails
            return {"sha": None, "dirty": None}
        if oid:
            return {"sha": oid, "dirty": any(not line.startswith("# ") for line in lines)}
    # Outside a work tree, or a git without porcelain v2 (before 2.11) or --no-ahead-behind (2.17).
    sha = git("rev-parse", "HEAD")
    if sha is None:
        return {"sha": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": bool(status) if status is not None else None}


# The line of `git status --porcelain=v2 --branch` naming the commit checked out.
_OID = "# branch.oid "


def collect_manifest(
    *,
    run_name: str,
    run_id: str,
    record: str = "run",
    attempt: int | None = None,
    t3rl_root: Path,
    topology: Mapping[str, Any],
    seeds: Mapping[str, int],
    overrides: list[str],
    config_dirs: list[str],
    created_at: str | None = None,
) -> dict[str, Any]:
    """manifest.json: what ran, from which code; the machine the launcher ran on (`launcher`) and what
    the config asks of the cluster (`planned_topology`) are two things: under executor=slurm or ray
    the stages run elsewhere."""
    versions = package_versions()
    git, platform_text = _slow_facts(t3rl_root)
    return {
        "run": run_name,
        "run_id": run_id,
        # "run": t3rl run executes it; "plan": written by t3rl plan, never executed.
        "record": record,
        "attempt": attempt,
        "t3rl_version": versions.get("t3rl"),
        "created_at": created_at or now(),
        "updated_at": now(),
        "git": git,
        "packages": versions,
        "launcher": {
            "hostname": socket.gethostname(),
            "platform": platform_text,
            "python": platform.python_version(),
            "pid": os.getpid(),
        },
        "planned_topology": dict(topology),
        "seeds": dict(seeds),
        "overrides": mask_overrides(overrides),
        "config_dirs": config_dirs,
        # What the config's relative paths (models/…, checkpoints, a data dir) resolve against: a resume
        # runs there (launch.run.single), wherever it is typed. Read back by `started_in` only.
        WORKING_DIR: os.getcwd(),
    }


# The manifest's key for the directory the run was started in.
WORKING_DIR = "working_dir"


class StartedIn(Record):
    """The directory a run was started in, as its manifest records it (None: a record from before it was
    recorded, or changed outside t3rl), and whether it is a directory here. A Record, not a dataclass:
    a cold `t3rl plan` imports this module (tests/architecture/test_cold_dataclasses.py)."""

    recorded: str | None
    exists: bool

    @property
    def resolve_in(self) -> str | None:
        """Where a resume of the run (and a check of what it would run again) resolves the config's
        relative paths: the recorded dir while it exists; None, the current dir, when it is gone or none
        is recorded."""
        return self.recorded if self.exists else None

    @property
    def gone(self) -> bool:
        return self.recorded is not None and not self.exists


def started_in(manifest: Mapping[str, Any]) -> StartedIn:
    """Where the run of `manifest` was started: the one reader of what `collect_manifest` records, for a
    resume (launch.run.single), a sweep's resume, `t3rl runs show`'s staleness and a sweep's extension."""
    recorded = manifest.get(WORKING_DIR)
    if not isinstance(recorded, str) or not recorded:
        return StartedIn(None, exists=False)
    return StartedIn(recorded, exists=os.path.isdir(recorded))


# The manifest's platform string is `platform.platform()`'s, built without the child process that runs
# `uname -p` for the processor's name (a process start and ~1 ms of CPU in each plan and run):
# `platform.platform()` leaves that name out when it is "unknown" or the machine's own name, which is
# what Linux's coreutils answer ("unknown") and what the distributions that patch them answer (`x86_64`,
# `aarch64`). So on Linux the string is made of `os.uname()` and the C library's version. A string
# holding what `platform.platform()` rewrites (spaces, path and shell characters, "unknown", a doubled
# dash; also a trailing one), and any other system, get `platform.platform()` itself.
_REWRITTEN = (" ", "/", "\\", ":", ";", '"', "(", ")", "unknown", "--")


def platform_text() -> str:
    """`platform.platform()`'s string (`Linux-6.1.0-18-amd64-x86_64-with-glibc2.36`) without its child
    process: see `_REWRITTEN`."""
    system = os.uname()
    if system.sysname != "Linux":
        return platform.platform()
    libc, version = platform.libc_ver()
    parts = (system.sysname, system.release, system.machine, "with", libc + version)
    text = "-".join(part for part in parts if part)
    if not all(parts[:3]) or text.endswith("-") or any(word in text for word in _REWRITTEN):
        return platform.platform()
    return text


class _Prefetch(threading.Thread):
    """The git state and the platform string, computed on a thread: the git state waits on `git`
    subprocesses, which then overlap with resolving and planning instead of following them."""

    def __init__(self, t3rl_root: Path) -> None:
        super().__init__(name="t3rl-manifest-facts", daemon=True)
        self.t3rl_root = t3rl_root
        self.facts: tuple[dict[str, Any], str] | None = None

    def run(self) -> None:
        self.facts = (git_state(self.t3rl_root), platform_text())


_prefetched: list[_Prefetch] = []


@contextlib.contextmanager
def prefetched_manifest_facts(t3rl_root: Path) -> Iterator[None]:
    """Inside the block, the first manifest collected for `t3rl_root` takes its git state and platform
    string from a thread started on entry; later ones, and any after the block, compute their own."""
    prefetch = _Prefetch(t3rl_root)
    prefetch.start()
    _prefetched.append(prefetch)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            _prefetched.remove(prefetch)


def code_state(t3rl_root: Path) -> dict[str, Any]:
    """The git state this command's manifest records (the prefetched one, left for the manifest)."""
    for prefetch in _prefetched:
        if prefetch.t3rl_root == t3rl_root:
            prefetch.join()
            if prefetch.facts is not None:
                return prefetch.facts[0]
    return git_state(t3rl_root)


def older_code(state: RunState, code: Mapping[str, Any]) -> list[str]:
    """The stages whose kept output was made by other code than `code` (another commit, or the same
    with uncommitted changes on one side only); records that do not say are left out."""
    if not code.get("sha"):
        return []
    now_ = (code.get("sha"), code.get("dirty"))
    return [
        name
        for name, record in state.stages.items()
        if record.status in ("succeeded", "skipped")
        and isinstance(record.code, dict)
        and record.code.get("sha")
        and (record.code.get("sha"), record.code.get("dirty")) != now_
    ]


def _slow_facts(t3rl_root: Path) -> tuple[dict[str, Any], str]:
    """(git state, platform string): prefetched for this root if still unused, else computed now."""
    for prefetch in _prefetched:
        if prefetch.t3rl_root == t3rl_root:
            _prefetched.remove(prefetch)
            prefetch.join()
            if prefetch.facts is not None:
                return prefetch.facts
            break
    return git_state(t3rl_root), platform_text()


def _scrub_file(rel: str, text: str) -> str:
    """`text` scrubbed; a YAML file whose text held a secret is scrubbed as data and dumped again, so
    the mask lands as a quoted string (a bare `***` would be read back as a YAML alias)."""
    scrubbed = scrub_text(text)
    if scrubbed == text or not rel.endswith((".yaml", ".yml")):
        return scrubbed
    return yaml.safe_dump(scrub_obj(safe_load(text)), sort_keys=False, allow_unicode=True)
