"""A mutation hunt over the record files a run dir, a sweep dir and a `t3rl eval` out dir hold, read back
by every command that reads them (tests/launch/test_record_mutation_hunt.py).

Each record file is known here by its kind (how to damage its content) and whether a resume may write
it anew from the config (a derived file: plan.sh, a stage's command.sh, …) or must keep it as the run's
history. Each mutation damages one file in a copy of a recorded dir; `judge` says whether a command's
answer to it keeps the contract:

- refused: exit 1 or 2 (the documented codes: a record that cannot be read is 1, `launch.cli.failures`),
  no traceback, a line naming the damaged file, and the damaged file as it was (nothing lost);
- or accepted (exit 0), the damaged file as it was, or written anew only where t3rl writes it anew
  anyway (a derived file), or kept under superseded/ (a damaged config.yaml a resume replaces).

A file outside the run dir that a record was made a symlink to is never written.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The content kinds of record files: how each is damaged beyond its bytes.
JSON, YAML, JSONL, TEXT, BINARY = "json", "yaml", "jsonl", "text", "binary"


@dataclass(frozen=True)
class Record:
    """One record file of a recorded dir, by its path relative to the dir."""

    path: str
    kind: str
    # Written anew by every command that writes the dir, from the config (a damaged copy is replaced).
    derived: bool = False
    # Written by `run --run-dir` / `eval --resume` without being read (nor by `plan --run-dir`, the
    # resume's preview): only what the file is (missing, a directory, a symlink, unreadable) can
    # matter to those, not what it says.
    unread: bool = False
    # Appended to by every resume (what it held stays first).
    appended: bool = False
    # Kept line by line by a resumed eval where each line verifies; the rest is run again and counted.
    redone: bool = False


# What the hunt knows of the files `t3rl run` writes in a run dir; launch.run.rundir.RECORD_FILES and
# STAGE_RECORD_FILES declare most (the hunt's test checks it knows each of them), the rest are the
# stage's own (its log, its exit code, the runtime config it reads).
RUN_RECORDS = (
    Record("config.yaml", YAML),  # a resume keeps a damaged one under superseded/
    Record("overrides.yaml", YAML),
    Record("overrides.history.yaml", YAML, appended=True),
    Record("manifest.json", JSON, derived=True),  # each attempt's (its run id and creation kept)
    Record("provenance.json", JSON, derived=True, unread=True),
    Record("secret_fingerprints.json", JSON, derived=True, unread=True),
    Record("plan.sh", TEXT, derived=True, unread=True),
    Record("state.json", JSON),
    Record("file_hashes.json", JSON, derived=True),  # a cache: lost, the outputs are hashed again
    Record("runtime/prepare_data.yaml", YAML, derived=True, unread=True),
    Record("stages/prepare_data/command.sh", TEXT, derived=True, unread=True),
    Record("stages/prepare_data/status.json", JSON, derived=True, unread=True),  # state.json's copy
    # The stage's own: a resume that finds them changed runs the stage again, which writes them.
    Record("stages/prepare_data/outputs.json", JSON, derived=True),
    Record("stages/prepare_data/exit_code.json", JSON, derived=True),
    Record("stages/prepare_data/log.txt", TEXT, appended=True, unread=True),
)
SWEEP_RECORDS = (Record("sweep.json", JSON), Record("sweep.md", TEXT, derived=True, unread=True))
# A `t3rl eval` out dir; an eval given it again with --resume writes its record anew but for the
# trajectories it keeps.
EVAL_RECORDS = (
    Record("config.yaml", YAML),
    Record("overrides.yaml", YAML, derived=True, unread=True),
    Record("manifest.json", JSON, derived=True),
    Record("secret_fingerprints.json", JSON, derived=True, unread=True),
    # read by --resume for its earlier attempts' commits (a damaged one: those commits not known)
    Record("summary.json", JSON, derived=True),
    Record("report.md", TEXT, derived=True, unread=True),
    Record("accuracy_by_category.png", BINARY, derived=True, unread=True),
    Record("trajectories.jsonl", JSONL, redone=True),
    Record("trajectories.index.jsonl", JSONL, redone=True),
)
# The records an eval resumed keeps (the index only says which of them verify).
REDONE_RECORDS = ("trajectories.jsonl",)
# Written by a command that holds the dir (empty; their presence means nothing).
LOCKS = (".lock", ".records.lock")


def unknown_files(root: Path, records: tuple[Record, ...], below: tuple[str, ...] = ()) -> list[str]:
    """The files under `root` (not under the dirs `below`, which hold other records or a stage's
    outputs) that are neither a record the hunt knows nor a lock: a record file added to what t3rl
    writes, which the hunt must learn to damage."""
    known = {r.path for r in records} | set(LOCKS)
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or path.is_dir() or any(rel == b or rel.startswith(b + "/") for b in below):
            continue
        if rel not in known:
            found.append(rel)
    return sorted(found)


# ------------------------------------------------------------------------------------------ mutations


def _data(path: Path, kind: str) -> Any:
    text = path.read_text(encoding="utf-8")
    if kind == JSON:
        return json.loads(text)
    if kind == YAML:
        import yaml

        return yaml.safe_load(text)
    return [json.loads(line) for line in text.splitlines()]


def _dump(path: Path, kind: str, data: Any) -> None:
    if kind == JSON:
        path.write_text(json.dumps(data, indent=2) + "\n")
    elif kind == YAML:
        import yaml

        path.write_text(yaml.safe_dump(data, sort_keys=False))
    else:
        path.write_text("".join(json.dumps(item) + "\n" for item in data))


def _first_number_path(data: Any) -> list[Any] | None:
    """Where the first number (not a bool) in `data` is, as keys and indexes; None when it holds none."""
    todo: list[tuple[list[Any], Any]] = [([], data)]
    while todo:
        where, node = todo.pop(0)
        if isinstance(node, int | float) and not isinstance(node, bool):
            return where
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        todo.extend(([*where, k], v) for k, v in items)
    return None


def _set(data: Any, where: list[Any], value: Any) -> None:
    for key in where[:-1]:
        data = data[key]
    data[where[-1]] = value


def _the_mapping(data: Any) -> dict[str, Any] | None:
    """The mapping a field is removed from or added to: the record itself, or a list's first item."""
    if isinstance(data, dict) and data:
        return data
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return data[0]
    return None


def _structured(change: Callable[[Any], Any | None]) -> Callable[[Path, Record, Path], bool]:
    """A mutation of a JSON/YAML/JSONL record's data: `change` returns the damaged data, or None when it
    does not apply to this data."""

    def mutate(path: Path, record: Record, outside: Path) -> bool:
        if record.kind not in (JSON, YAML, JSONL):
            return False
        data = _data(path, record.kind)
        if record.kind == JSONL:  # its last line, as an eval cut short would have left it
            if not data:
                return False
            last = change(data[-1])
            if last is None:
                return False
            _dump(path, JSONL, [*data[:-1], last])
            return True
        damaged = change(data)
        if damaged is None:
            return False
        _dump(path, record.kind, damaged)
        return True

    return mutate


def _wrong_top(data: Any) -> Any:
    return [] if isinstance(data, dict) else {} if isinstance(data, list) else None


def _number_as_text(data: Any) -> Any:
    where = _first_number_path(data)
    if not where:
        return None
    _set(data, where, "7")
    return data


def _field_removed(data: Any) -> Any:
    mapping = _the_mapping(data)
    if mapping is None:
        return None
    del mapping[next(iter(mapping))]
    return data


def _field_added(data: Any) -> Any:
    mapping = _the_mapping(data)
    if mapping is None:
        return None
    mapping["zz_not_a_t3rl_field"] = {"written": "by hand"}
    return data


# The mutations that change what a file is, not what it says: all a command that does not read it meets.
OF_THE_FILE = ("deleted", "directory", "symlink-outside", "mode-000")


def _deleted(path: Path, record: Record, outside: Path) -> bool:
    path.unlink()
    return True


def _emptied(path: Path, record: Record, outside: Path) -> bool:
    path.write_bytes(b"")
    return True


def _truncated(path: Path, record: Record, outside: Path) -> bool:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return True


def _partial_line(path: Path, record: Record, outside: Path) -> bool:
    if record.kind != JSONL:
        return False
    with path.open("ab") as file:
        file.write(b'{"key": ["cut_short", 0, 0], "sha2')
    return True


def _not_utf8(path: Path, record: Record, outside: Path) -> bool:
    data = path.read_bytes()
    middle = len(data) // 2
    path.write_bytes(data[:middle] + b"\xff\xfe" + data[middle:])
    return True


# Far above every size a reader of the records treats apart (at most 1 MB: the first MB an error report
# quotes from, launch/config/errors.py; output_digest's 1 MB chunks), and above judge's 1 MB for the
# fingerprint: a bigger file is read the same way, only longer (each command reads it whole). Was 50 MB:
# the huge cases cost 9.7 s of CPU (-n 0), 3.6 s at 8 MB.
HUGE = 8 * 2**20


def _huge(path: Path, record: Record, outside: Path) -> bool:
    """8 MB: its content followed by a hole of zeros (a sparse file, nothing written to the disk)."""
    with path.open("r+b") as file:
        file.truncate(HUGE)
    return True


def _a_directory(path: Path, record: Record, outside: Path) -> bool:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("a file in a directory where the record was\n")
    return True


def _symlink_outside(path: Path, record: Record, outside: Path) -> bool:
    """The record a symlink to a copy of itself outside the recorded dir (a dir assembled by hand)."""
    target = outside / ("outside-" + path.name)
    shutil.copy2(path, target)
    path.unlink()
    path.symlink_to(target)
    return True


def _unreadable(path: Path, record: Record, outside: Path) -> bool:
    if os.geteuid() == 0:  # root reads a file of mode 000
        return False
    path.chmod(0)
    return True


def _in_the_future(path: Path, record: Record, outside: Path) -> bool:
    later = time.time() + 10 * 365 * 86400
    os.utime(path, (later, later))
    return True


MUTATIONS: dict[str, Callable[[Path, Record, Path], bool]] = {
    "deleted": _deleted,
    "emptied": _emptied,
    "truncated": _truncated,
    "partial-line": _partial_line,
    "not-utf8": _not_utf8,
    "list-for-object": _structured(_wrong_top),
    "text-for-number": _structured(_number_as_text),
    "field-removed": _structured(_field_removed),
    "field-added": _structured(_field_added),
    "huge": _huge,
    "directory": _a_directory,
    "symlink-outside": _symlink_outside,
    "mode-000": _unreadable,
    "future-mtime": _in_the_future,
}


# ------------------------------------------------------------------------------------------ judging

Print = tuple[str, bytes | None, int]


def fingerprint(path: Path) -> Print:
    """What a file is now, to tell whether a command changed it: its type, its bytes (a file's; the
    listing of a directory; the target of a symlink) and its size."""
    if path.is_symlink():
        return ("symlink", os.readlink(path).encode(), 0)
    if not path.exists():
        return ("absent", None, 0)
    if path.is_dir():
        return ("dir", "\n".join(sorted(p.name for p in path.iterdir())).encode(), 0)
    mode = stat.S_IMODE(path.stat().st_mode)
    size = path.stat().st_size
    if size > 2**20 or not mode & stat.S_IRUSR:  # huge or unreadable: its size and mode say enough
        return ("file", f"{mode:o}".encode(), size)
    return ("file", path.read_bytes(), size)


def tree(root: Path) -> dict[str, Print]:
    """Every path below `root` (locks aside: a reader may take one) with its fingerprint."""
    return {
        path.relative_to(root).as_posix(): fingerprint(path)
        for path in root.rglob("*")
        if path.name not in LOCKS
    }


# What a refusal's fix starts with, in the words t3rl's messages use: one of them is in every refusal.
FIX_WORDS = (
    "restore", "fix it by hand", "delet", "remove", "move", "rerun", "give it", "choose", "resume",
    "t3rl run", "make it", "raise", "drop", "chmod",
)  # fmt: skip


@dataclass
class Answer:
    """A command's answer to one damaged record."""

    command: str
    code: int | None
    output: str
    exception: BaseException | None = None
    # Whether the command only reads the dir (`t3rl runs`, `runs show|diff`, `plan --run-dir`).
    reads_only: bool = True


@dataclass
class Case:
    """One record damaged one way in one copy of a recorded dir."""

    root: Path  # the recorded dir's copy
    record: Record
    outside: Path  # a dir outside it (a symlink's target lives there)

    @property
    def damaged(self) -> Path:
        return self.root / self.record.path


def judge(
    answer: Answer,
    case: Case,
    before: dict[str, Print],
    outside_before: dict[str, bytes],
    usual: int = 0,
    after: dict[str, Print] | None = None,
) -> str | None:
    """What breaks the contract in `answer` (None: kept). `before`: the dir's `tree` before the command,
    damage done; `outside_before`: the bytes of each file outside it; `usual`: the command's exit code
    on the intact record (`plan --run-dir` of a sweep refuses it whatever it holds); `after`: the dir's
    `tree` once the command ended, when the caller took it (it is the next command's `before`)."""
    shown = " ".join(answer.output.split())[-400:]
    if answer.exception is not None and not isinstance(answer.exception, SystemExit):
        return f"raised {type(answer.exception).__name__}: {answer.exception}"
    if "Traceback" in answer.output:
        return f"a traceback: {shown}"
    if answer.code not in (0, 1, 2):
        return f"exit {answer.code}: {shown}"
    written = sorted(
        name for name, data in outside_before.items() if (case.outside / name).read_bytes() != data
    )
    if written:
        return f"wrote {written} outside the dir, through the symlink"
    after = tree(case.root) if after is None else after
    if answer.reads_only and after != before:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return f"a command that only reads changed {changed[:5]}: {shown}"
    rel = case.record.path
    was, now = before.get(rel, ("absent", None, 0)), after.get(rel, ("absent", None, 0))
    if answer.code != 0:
        if now != was:
            return f"refused, but the damaged file changed ({was[0]} -> {now[0]}): {shown}"
        if answer.code == usual:
            return None  # its refusal of the intact record too
        # The output folds long lines: joined, a path split over two lines is found.
        if rel not in answer.output and str(case.damaged) not in "".join(answer.output.split()):
            return f"exit {answer.code} without naming {rel}: {shown}"
        if not any(word in shown.lower() for word in FIX_WORDS):
            return f"exit {answer.code} naming no fix: {shown}"
        return None
    if now == was or _kept_anew(case, was, now, before, after):
        return None
    return f"exit 0 and the damaged file changed ({was[0]} -> {now[0]}): {shown}"


def _kept_anew(case: Case, was: Print, now: Print, before: dict[str, Print], after: dict[str, Print]) -> bool:
    """Whether a command that went on replaced the damaged file without losing what it held."""
    record = case.record
    if was[0] == "absent" or was[1] == b"" or record.derived:
        return True  # made anew where it was missing or empty; a file every run writes anew from the config
    if was[0] == "symlink":
        return True  # the file it pointed to is outside, untouched (`judge` checked)
    if any(k.startswith("superseded/") and v == was for k, v in after.items()):
        return True  # kept under superseded/ (a damaged config.yaml a resume replaces)
    if record.appended and was[0] == now[0] == "file" and was[1] is not None and now[1] is not None:
        return _prefix(was[1], now[1], record.kind)
    if record.redone:
        if all(before.get(name) == after.get(name) for name in REDONE_RECORDS):
            return True  # every record kept: what was dropped verified none (an index line torn, or past it)
        summary = case.root / "summary.json"
        attempts = json.loads(summary.read_text()).get("attempts", {}) if summary.is_file() else {}
        # The resumed eval dropped what did not verify, ran it again and counts it.
        return bool(attempts.get("rerun"))
    return False


def _prefix(old: bytes, new: bytes, kind: str) -> bool:
    """Whether `new` holds what `old` held, with more after it (a log appended to, a history of attempts
    with one more)."""
    if kind != YAML:
        return new.startswith(old)
    import yaml

    try:
        old_data, new_data = yaml.safe_load(old), yaml.safe_load(new)
    except yaml.YAMLError:
        return False
    return isinstance(old_data, list) and isinstance(new_data, list) and new_data[: len(old_data)] == old_data
