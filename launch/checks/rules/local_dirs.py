"""Directories the launcher uses on this machine: the ones t3rl writes into can be written, the ones it
uploads to the cluster are there.

Fields are found by their declared kind (t3rl_core.fields), walking the validated config, so a new
directory is checked by declaring its type:

- `OutputDir` (and `SharedOutputDir`): under an executor that runs stages on this machine, a directory,
  or a path whose nearest existing ancestor is a directory, that this user can write; a file in its
  place, or a read-only tree, would stop the run at its first write. The dry executor writes only its
  plan (plans_dir); under SLURM and Ray the launcher still writes the run dir, the plans and submitit's
  job scripts from here (`_LAUNCHER_WRITES`), and the rest is the cluster's.
- `UploadDir`: a local directory or .zip the launcher uploads (Ray's runtime_env working_dir) exists
  here; a remote URI (s3://, https://, ...) is the cluster's to fetch.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from launch.checks.context import Context
from launch.checks.declared import markers, walked
from launch.config.errors import Problem
from launch.config.fixes import quoted
from t3rl_core.fields import ReadWhen, StrKind


def fields_of_kind(
    model: BaseModel, kind: str, prefix: str = "", *, nested: bool = True
) -> Iterator[tuple[str, str, Any]]:
    """(dotted key, value, the field's default) of every set str field of kind `kind` under `model`
    that something reads (a field whose `ReadWhen` its sibling does not meet is nobody's path);
    without `nested`, of `model`'s own fields only."""
    fields = type(model).model_fields
    for name, _ in walked(type(model), StrKind):  # the fields declaring a kind, or holding a model
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if isinstance(value, str) and kind in _kinds(type(model), name) and _read(model, fields[name]):
            yield key, value, fields[name].default
        elif nested and isinstance(value, BaseModel):
            yield from fields_of_kind(value, kind, f"{key}.")


@functools.cache
def _kinds(model: type[BaseModel], name: str) -> frozenset[str]:
    """The str kinds the field declares, read once per field (five rules walk the config for a kind)."""
    field = model.model_fields[name]
    return frozenset(m.name for m in markers(field.metadata, field.annotation, StrKind))


def _read(model: BaseModel, field: FieldInfo) -> bool:
    """Whether something reads the field: every `ReadWhen` it declares is met by its sibling."""
    whens = markers(field.metadata, field.annotation, ReadWhen)
    return all(when.reads(getattr(model, when.sibling, None)) for when in whens)


def unwritable(path: Path, *, probe: bool = True, probed: dict[Path, str | None] | None = None) -> str | None:
    """Why t3rl could not create or write `path`, or None. Without `probe`, judged by access(2) alone
    (permissions, ACLs and a read-only mount, for root too) and nothing is made: a run dir's mtime is
    part of the record that a refused resume leaves as it was. `probed`: the probes of one check so
    far (directory → why making a directory in it fails), shared by its paths, which mostly sit in
    one directory (each probe is a mkdir and an rmdir)."""
    try:
        return _unwritable(path, probe, {} if probed is None else probed)
    except OSError as error:  # a name too long, a loop of links: every call on the path fails the same
        return f"{path} cannot be used: {error.strerror}"


def _unwritable(path: Path, probe: bool, probed: dict[Path, str | None]) -> str | None:
    dangling = next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None)
    if dangling is not None:  # mkdir through it fails ("File exists") once the work is done
        return f"{dangling} is a symbolic link to {os.readlink(dangling)}, which does not exist"
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} {_denied(path)}"
        return _refused_write(path, path, probed) if probe else None
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so {path} cannot be created"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{path} does not exist and {ancestor} {_denied(ancestor)}"
    return _refused_write(ancestor, path, probed) if probe else None


def read_only(path: Path) -> bool:
    """Whether `path` is on a file system mounted read-only: no user may write it, whatever its modes."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_mount(path: Path) -> Path | None:
    """Where the read-only mount holding `path` begins (its highest directory still read-only: what to
    remount read-write), or None when `path` is writable there."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not read_only(existing):
        return None
    while existing != existing.parent and read_only(existing.parent):
        existing = existing.parent
    return existing


def _denied(path: Path) -> str:
    """Why access(2) refused writing `path`: its mount (a mode change is no fix there), or its modes."""
    return "is on a read-only file system" if read_only(path) else "is not writable by this user"


# The directories this process made a directory in, each with what decides whether it can again: its
# identity and modes, and this process's user and group (a read-only remount fails access(2) before a
# probe). A probe is a mkdir and an rmdir, whose wall time is the disk's (~3-4 ms on ext4 here), and
# every resolve probes the same few directories (a test suite or a sweep resolves thousands). Refusals
# are not kept: they are the answers worth finding anew, and cost little.
_MADE_IN: set[tuple[str, int, int, int, int, int, int, int]] = set()


def _made_in_key(directory: Path) -> tuple[str, int, int, int, int, int, int, int]:
    status = os.stat(directory)
    return (
        str(directory), status.st_dev, status.st_ino, status.st_mode, status.st_uid, status.st_gid,
        os.geteuid(), os.getegid(),
    )  # fmt: skip


def _refused_write(directory: Path, path: Path, probed: dict[Path, str | None]) -> str | None:
    """Why a directory cannot be made in `directory` (which `path` needs), found by making one and
    removing it: permission bits do not say it for root (who passes every access check) nor for the
    kernel's own trees (/proc, /sys), whose modes allow what the kernel then refuses."""
    if directory not in probed:
        made_here = _made_in_key(directory)
        if made_here in _MADE_IN:
            probed[directory] = None
        else:
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".t3rl-probe-", dir=directory))
                probed[directory] = None
                _MADE_IN.add(made_here)
            except OSError as exc:
                probed[directory] = exc.strerror
    failed = probed[directory]
    return (
        None
        if failed is None
        else f"{path} cannot be created: making a directory in {directory} fails ({failed})"
    )


# The one directory the dry executor writes (its plan: launch.run.single._plan_dir); it runs no stage.
_DRY_WRITES = ("paths.plans_dir",)
# What the launcher writes from this machine under any executor that runs something: the run dir (a
# plan: the plan dir), and submitit's job scripts (executor.folder), before any job starts.
_LAUNCHER_WRITES = ("paths.runs_dir", "paths.plans_dir", "executor.folder")
# Where a new record goes: each command is judged by the one it writes (`Context.record_key`), and one
# whose command line names its record's dir (`Context.record_dir`: a resume writes into its run dir,
# `t3rl plan --out` into DIR) by neither, and probes its own dir. Judged by both, an unwritable runs dir
# refused a resume of a writable copy and an unwritable plans dir a new run, each with a fix (another
# paths.runs_dir, paths.plans_dir) that the command never reads.
_NEW_RECORD_DIRS = ("paths.runs_dir", "paths.plans_dir")


def output_dirs_writable(ctx: Context) -> Iterator[Problem]:
    """Output directories of a run whose stages start on this machine can be created and written."""
    kind = ctx.run.executor.kind
    probed: dict[Path, str | None] = {}
    for key, value, default in fields_of_kind(ctx.run, "output dir"):
        if (kind == "dry" and key not in _DRY_WRITES) or (
            kind in ("slurm", "ray") and key not in _LAUNCHER_WRITES
        ):
            continue  # a plan for another machine, or a cluster's path: that machine's to write
        if key in _NEW_RECORD_DIRS and key != ctx.record_key:
            continue  # the command writes its record elsewhere: the dir named, or the other one
        why = unwritable(Path(os.path.expanduser(value)), probed=probed)
        if why is None:
            continue
        fallback = default if isinstance(default, str) and default != value else None
        if fallback is not None and unwritable(Path(os.path.expanduser(fallback)), probed=probed) is None:
            fix = f"set {key}={quoted(fallback)} (its default, writable here)"
        else:
            fix = f"point {key} at a directory you can write (or fix the permissions of {value})"
        when = "the plan is written" if key == "paths.plans_dir" else "the run starts"
        yield Problem(key, f"{why}: t3rl writes into {key} when {when}", fix=fix)


def upload_dirs_present(ctx: Context) -> Iterator[Problem]:
    """A local directory the launcher uploads to the cluster exists here (a .zip file will do)."""
    for key, value, _ in fields_of_kind(ctx.run, "upload dir"):
        if "://" in value:
            continue
        path = Path(os.path.expanduser(value))
        if path.is_dir() or (path.is_file() and path.suffix == ".zip"):
            continue
        what = "is a file, not a directory or .zip" if path.exists() else "does not exist on this machine"
        yield Problem(
            key,
            f"{path} {what}: the launcher uploads it to the cluster as each job's working directory",
            fix=f"set {key}=null (paths shared with the cluster need no upload), or point it at a directory",
        )


RULES = (output_dirs_writable, upload_dirs_present)
