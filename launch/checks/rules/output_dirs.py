"""Every directory t3rl writes into can be written, where it will be written.

Fields of the kind `OutputDir` (t3rl_core.fields) are found by walking the validated config, so a new
output directory is checked by declaring its type. Under an executor that runs stages on this machine,
each must be a directory, or a path whose nearest existing ancestor is a directory, that this user can
write: a file in its place, or a read-only tree, would stop the run at its first write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.fixes import quoted
from t3rl_core.fields import StrKind

_KIND = "output dir"


def _output_dirs(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(dotted key, value, the field's default) of every OutputDir field under `model`."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if any(isinstance(m, StrKind) and m.name == _KIND for m in field.metadata) and isinstance(value, str):
            yield key, value, field.default
        elif isinstance(value, BaseModel):
            yield from _output_dirs(value, f"{key}.")


def _unwritable(path: Path) -> str | None:
    """Why t3rl could not create or write `path`, or None."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path} is not writable by this user"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so {path} cannot be created"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{path} does not exist and {ancestor} is not writable by this user"
    return None


def output_dirs_writable(ctx: Context) -> Iterator[Problem]:
    """Output directories of a run whose stages start on this machine can be created and written."""
    if ctx.run.executor.kind not in ("local", "dry"):
        return  # the paths are the cluster's
    for key, value, default in _output_dirs(ctx.run):
        why = _unwritable(Path(os.path.expanduser(value)))
        if why is None:
            continue
        fallback = str(default) if isinstance(default, str) else None
        usable = (
            fallback is not None and fallback != value and _unwritable(Path(os.path.expanduser(fallback)))
        )
        fix = (
            f"set {key}={quoted(fallback)} (its default, writable here)"
            if fallback is not None and fallback != value and usable is None
            else f"point {key} at a directory you can write (or fix the permissions of {value})"
        )
        yield Problem(key, f"{why}: t3rl writes into {key} when the run starts", fix=fix)


RULES = (output_dirs_writable,)
