"""Interpreters and the modules they import, found by their declared kind (t3rl_core.fields), where the
executor runs every stage on this machine (executor=local):

- every `Interpreter` field (slime's and t3rl's interpreters, a sandbox's cell interpreter, a plugin's)
  names an executable here: an absolute path that exists, or a command on PATH. A missing one fails
  its stage, or worse, every sandbox cell of a rollout, which trains the model on the errors;
- every `ModuleName` a section imports with this interpreter (its `Interpreter` field unset, or this
  very one: a sandbox's `preload`) is installed here; a misspelt one gets the nearest installed module.

On a cluster the interpreters and packages are the cluster's, and are not probed here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem
from launch.config.fixes import list_override, quoted
from t3rl_core.fields import StrKind
from t3rl_core.import_paths import nearest_module

INTERPRETER = "interpreter"
MODULE = "module name"


def _executable(value: str) -> bool:
    if "/" in value:
        return os.path.isfile(value) and os.access(value, os.X_OK)
    return shutil.which(value) is not None


def interpreters_exist_here(ctx: Context) -> Iterator[Problem]:
    """Under the local executor, every interpreter the config names is an executable on this machine."""
    if ctx.run.executor.kind != "local":
        return
    for key, value, default in fields_of_kind(ctx.run, INTERPRETER):
        if _executable(value):
            continue
        if default is None:
            fix = f"set {key}=null (the interpreter running t3rl)"
        elif isinstance(default, str) and default != value and _executable(default):
            fix = f"set {key}={quoted(default)} (its default, found here)"
        else:
            fix = f"point {key} at an existing interpreter (e.g. {sys.executable})"
        why = "no such file" if "/" in value else "no such command on PATH"
        yield Problem(
            key,
            f"{value} is not an executable on this machine ({why}; executor=local runs every stage here)",
            fix=fix,
        )


def modules_installed_here(ctx: Context) -> Iterator[Problem]:
    """Under the local executor, the modules a section imports with this interpreter are installed."""
    if ctx.run.executor.kind != "local":
        return
    for key, names, python in _module_lists(ctx.run):
        if python is not None and os.path.realpath(shutil.which(python) or python) != os.path.realpath(
            sys.executable
        ):
            continue  # another interpreter's packages: its own start-up reports them
        missing = [(i, name) for i, name in enumerate(names) if not _installed(name)]
        if not missing:
            continue
        fixed = list(names)
        for index, name in reversed(missing):
            nearest = nearest_module(name)
            if nearest is None:
                del fixed[index]
            else:
                fixed[index] = nearest
        yield Problem(
            key,
            f"{', '.join(name for _, name in missing)}: not installed for {sys.executable}, which imports "
            f"{key} (executor=local runs every stage here)",
            fix=f"set {list_override(key, fixed)}",
        )


def _installed(module: str) -> bool:
    """Found without importing it (its parents are imported to find a submodule)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _module_lists(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, list[str], str | None]]:
    """(dotted key, names, the section's interpreter) of every list of module names under `model`."""
    python = next((value for key, value, _ in fields_of_kind(model, INTERPRETER) if "." not in key), None)
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if isinstance(value, list) and value and MODULE in _item_kinds(field.annotation):
            yield key, value, python
        elif isinstance(value, BaseModel):
            yield from _module_lists(value, f"{key}.")


def _item_kinds(annotation: Any) -> set[str]:
    """The str kinds declared on a list field's items (`list[ModuleName]`)."""
    found: set[str] = set()
    for item in get_args(annotation):
        if get_origin(item) is Annotated:
            found |= {m.name for m in item.__metadata__ if isinstance(m, StrKind)}
    return found


RULES = (interpreters_exist_here, modules_installed_here)
