"""A stage as data: its exact commands, what it reads from earlier stages, what it writes.

Executors only run `Stage.commands` and record what happened; none of them knows what slime is. A
later stage names an earlier stage's output by `OutputRef`, and the plan fills in the path, so a path
is written once (where the producing stage is built) and never copied by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal

from t3rl_core.records import Record

if TYPE_CHECKING:
    from launch.plan.slime_args import SlimeJob

StageKind = Literal[
    "prepare_model", "prepare_data", "convert_hf_to_torch_dist", "train", "convert_torch_dist_to_hf", "eval"
]
# A shell line (run as is by bash) or an argv (quoted when rendered).
Command = str | tuple[str, ...]

# What each output a stage declares must hold once its command exited 0 (`Stage.verify`: path → Holds),
# the one declaration of it: the pipeline checks it when the stage ends and on resume. Before, only
# existence was checked, so `touch summary.json` or a checkpoint dir made but never written recorded the
# stage as succeeded, and what read it failed later (or scored nothing).
HoldsKind = Literal["file", "dir", "exists"]


class Holds(Record):
    """What one output path must hold: `file` a file with at least one byte; `dir` a directory with at
    least one entry and each of `markers` (relative paths) a file inside it; `exists` a file or
    directory, empty or not."""

    kind: HoldsKind
    markers: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "file":
            return "a file with bytes"
        if self.kind == "dir":
            return "a directory with " + (" and ".join(self.markers) if self.markers else "entries")
        return "a file or directory (may be empty)"


# The file Megatron writes into a torch_dist checkpoint dir once a save is whole (train, HF → torch_dist).
LATEST_CHECKPOINT = "latest_checkpointed_iteration.txt"

FILE = Holds("file")
DIR = Holds("dir")
# A file the stage writes that no later stage reads, which may hold nothing (a split of size 0).
MAY_BE_EMPTY = Holds("exists")


def marked(*markers: str) -> Holds:
    """A directory whose tool writes `markers` into it only once it is whole."""
    return Holds("dir", markers)


def shortfall(path: str, holds: Holds) -> str | None:
    """Why `path` does not hold what is declared, or None when it does (a missing path included: the
    caller names a missing output in its own words)."""
    if holds.kind == "exists" or not os.path.lexists(path):
        return None
    if holds.kind == "file":
        if not os.path.isfile(path):
            return f"{path} is not a file (declared: {holds.describe()})"
        return f"{path} is empty (declared: {holds.describe()})" if os.path.getsize(path) == 0 else None
    if not os.path.isdir(path):
        return f"{path} is not a directory (declared: {holds.describe()})"
    with os.scandir(path) as entries:
        if next(entries, None) is None:
            return f"{path} is an empty directory (declared: {holds.describe()})"
    absent = [m for m in holds.markers if not os.path.isfile(os.path.join(path, m))]
    if absent:
        return f"{path} has no {', '.join(absent)} (declared: {holds.describe()}; it is not whole)"
    return None


def first_shortfall(declared: Mapping[str, Holds]) -> str | None:
    """The first declared output that does not hold what it must; None when all do."""
    for path, holds in declared.items():
        why = shortfall(path, holds)
        if why is not None:
            return why
    return None


class OutputRef(Record):
    """Output `key` of the earlier stage `stage`."""

    stage: str
    key: str

    def __str__(self) -> str:
        return f"{self.stage}.{self.key}"


class ImportCheck(Record):
    """Modules (plugins) a stage's processes import, and the interpreter and PYTHONPATH they run with:
    pre-flight imports them there before the first stage starts."""

    python: str
    pythonpath: str | None
    modules: tuple[str, ...]


class Stage(Record):
    """One step of a run, with everything needed to run it by hand."""

    name: str
    kind: StageKind
    commands: tuple[Command, ...]
    # Role → the earlier stage output this stage reads (e.g. "data" → prepare_data.dir).
    inputs: Mapping[str, OutputRef] = {}
    # Key → absolute path this stage writes.
    outputs: Mapping[str, str] = {}
    # Config files the stage reads (absolute path → content), written before it runs.
    files: Mapping[str, str] = {}
    # Variables exported before the commands run (never secrets).
    env: Mapping[str, str] = {}
    cwd: str | None = None
    # True: a Ray head must be up on this machine while the commands run (train stages).
    needs_ray_head: bool = False
    gpus: int = 0
    nodes: int = 1
    # Paths that all exist only once the stage's output is complete; a stage whose output is complete
    # is skipped (conversions, cached across runs). Empty = always run.
    complete_when: tuple[str, ...] = ()
    # The structured slime submission behind a train stage's `ray job submit` command (for executors
    # that submit through Ray's SDK instead of the CLI).
    slime_job: SlimeJob | None = None
    # One line for tables.
    summary: str = ""
    # Paths that must exist where the stage runs and that no stage makes (the slime checkout, a
    # downloaded model), each with what to do when it is missing: checked for every stage of a run
    # before the first one starts, so a missing install fails in seconds, not after data preparation.
    requires: Mapping[str, str] = {}
    # Environment variables that must be set (non-empty) where the stage runs, each with what reads
    # it (a credential by reference): checked with `requires`.
    requires_env: Mapping[str, str] = {}
    # The outputs whose content a resume checks (`launch.run.output_digest`), each with what it must
    # hold (`Holds` above: a file with bytes, a dir with entries and its markers): digested
    # when the stage finishes; a stage that exits 0 without writing one, or with one holding less than
    # declared, has failed, and a finished stage is skipped only while every one still matches. Not
    # part of the fingerprint (what to check is not what the stage does).
    verify: Mapping[str, Holds] = {}
    # Plugin modules the stage imports, checked by pre-flight where the stage runs.
    imports: ImportCheck | None = None
    # Lines for plan.sh above the stage's commands (e.g. how plugin code reaches its Ray job).
    notes: tuple[str, ...] = ()

    def reads_from(self) -> tuple[str, ...]:
        """The earlier stages whose outputs this stage reads (its `inputs`, in order, once each): a
        resume reruns it when one of them ran again, and only then (not when an unrelated one did)."""
        return tuple(dict.fromkeys(ref.stage for ref in self.inputs.values()))

    def script(self) -> str:
        """The stage's command.sh body: strict bash, its env, its cwd, its commands."""
        lines = ["set -euo pipefail"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in self.env.items()]
        if self.cwd:
            lines.append(f"cd {shlex.quote(self.cwd)}")
        lines += [render_command(c) for c in self.commands]
        return "\n".join(lines) + "\n"

    def fingerprint(
        self, anchor: str | PurePath | None = None, stores: Sequence[tuple[str, str]] = ()
    ) -> str:
        """Hash of everything that decides what the stage does; a change means its output is stale.
        With `anchor` (the run dir), paths below it count relative to it: a run dir moved or copied
        elsewhere keeps its stages' fingerprints, so a resume there reruns nothing for the move. So do
        the entries below each of `stores` (name, root: a store whose entries are named by what they
        hold, as the conversion cache in `paths.checkpoints_dir` is): a store moved keeps them too."""
        payload = {
            "kind": self.kind,
            "script": self.script(),
            "outputs": dict(self.outputs),
            "files": dict(self.files),
            "ray": self.needs_ray_head,
            "gpus": self.gpus,
            "nodes": self.nodes,
        }
        text = json.dumps(payload, sort_keys=True)
        # JSON escapes each character alone, so a root's escaped text is a substring of every escaped
        # value holding it. A NUL stands for it: no path, command or config file holds one. The longest
        # root first: a run dir inside a store is the run dir's. A store counts only with an entry below.
        roots = [(root.rstrip("/") + "/", f"\\u0000{name}/") for name, root in stores]
        if anchor is not None:
            roots.append((str(anchor), "\\u0000run_dir"))
        for root, placeholder in sorted(roots, key=lambda r: len(r[0]), reverse=True):
            text = text.replace(json.dumps(root)[1:-1], placeholder)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def render_command(command: Command) -> str:
    """A command as one shell line; long argvs wrap one flag per line for people."""
    if isinstance(command, str):
        return command
    if len(command) <= 8:
        return shlex.join(command)
    parts: list[str] = [shlex.quote(command[0])]
    for token in command[1:]:
        quoted = shlex.quote(token)
        if token.startswith("--") or token == "--":
            parts.append(" \\\n    " + quoted)
        else:
            parts.append(" " + quoted)
    return "".join(parts)
