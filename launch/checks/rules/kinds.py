"""Fields checked by their declared kind or type, walking the validated config, so that a new field is
checked by declaring it so (t3rl_core.fields):

- `Interpreter` and `ModuleName`: under the local executor, every interpreter (slime's and t3rl's, a
  sandbox's cell interpreter) names an executable here, and every module a section imports with this
  interpreter (a sandbox's `preload`) is installed here, a misspelt one fixed to the nearest installed
  module. A missing cell interpreter would not stop the run: every code call would fail, and the
  model would train on the errors. On a cluster they are the cluster's, not probed here.
- `Device`: the torch device of an eval stage that runs here (the local executor, Ray's
  `other_stages: local`) exists here: `cuda` needs a GPU, `cuda:N` its N+1-th, `mps` a Mac. GPUs are
  counted without torch: NVIDIA's driver lists each in /proc/driver/nvidia/gpus, narrowed by
  CUDA_VISIBLE_DEVICES; a machine with another kind of device node (AMD's /dev/kfd, WSL's /dev/dxg)
  is not judged.
- `Secret` (a credential by reference, `env:NAME` or `file:PATH`): a reference a stage run here reads
  resolves here (every one under the local executor; an eval stage's under Ray's `other_stages:
  local`). An unset variable or an unreadable file does not stop the stages before the one that reads
  it (tau2's customer in the second train stage, an eval's server key at the end): the run fails
  there, hours in.
- `list[Literal["a", ...]]` (BFCL's categories, tau2's domains and splits, augmentation kinds, a
  sandbox's required layers) names a set: each choice once. Where the list selects data, a repeat's
  tasks are prepared twice, so a split holds duplicates that a batch samples and an eval counts twice.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem
from launch.config.fixes import list_override, quoted
from launch.config.secrets import secret_references
from t3rl_core.fields import StrKind
from t3rl_core.import_paths import nearest_module

INTERPRETER = "interpreter"
MODULE = "module name"


def _executable(value: str) -> bool:
    if "/" in value:
        return os.path.isfile(value) and os.access(value, os.X_OK)
    return shutil.which(value) is not None


def _not_executable(value: str) -> str:
    """Why `_executable(value)` is false."""
    if "/" not in value:
        return "no such command on PATH"
    if os.path.isdir(value):
        return "a directory"
    if os.path.isfile(value):
        return "a file without execute permission"
    return "no such file"


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
        why = _not_executable(value)
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


def references_resolve_here(ctx: Context) -> Iterator[Problem]:
    """Every credential reference a stage run here reads names a variable set here or a file readable here
    (as `Secret.reveal` reads them, without reading the value): every one under the local executor, an
    eval stage's also under Ray's `other_stages: local`."""
    # the root eval section as each eval stage runs it (a stage's own key may replace it: then nothing
    # reads the root's), and every other section as it is
    evals = (
        (eval_key(stage, overrides, field), secret)
        for stage, config, overrides in (eval_configs(ctx.run) if ctx.stages_run_here else ())
        for field, secret in secret_references(config)
    )
    others = (
        (key, secret)
        for name in (type(ctx.run).model_fields if ctx.run.executor.kind == "local" else ())
        if name != "eval"
        for key, secret in secret_references(getattr(ctx.run, name), name)
    )
    for key, secret in dict([*evals, *others]).items():
        if secret.kind == "env":
            if os.environ.get(secret.target):
                continue
            why = f"environment variable {secret.target} is not set here"
            other = f"export {secret.target}=<the credential> before the command"
        else:
            path = Path(secret.target).expanduser()
            if not path.is_absolute() or (os.access(path, os.R_OK) and path.is_file()):
                continue  # a relative path is read from the stage's own directory, not from here
            why = f"{path} is {'not a file' if path.is_dir() else 'not a readable file'} here"
            other = f"write the credential into {path}"
        yield Problem(
            key,
            f"{key}={secret.reference}: {why}, where the stage that reads it runs: it fails then, after "
            "the stages before it ran",
            fix=f"set {key}=null if the server takes no key; or {other}",
        )


def _installed(module: str) -> bool:
    """Found without importing it (its parents are imported to find a submodule)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _module_lists(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, list[str], str | None]]:
    """(dotted key, names, the section's interpreter) of every list of module names under `model`."""
    # the section's own interpreter field (a walk of every section under it, for each section, before)
    python = next((value for _, value, _ in fields_of_kind(model, INTERPRETER, nested=False)), None)
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


_OTHER_GPUS = ("/dev/kfd", "/dev/dxg")


def visible_cuda_gpus() -> int | None:
    """CUDA devices a process started here sees; None when this machine may have GPUs t3rl cannot count."""
    if any(os.path.exists(node) for node in _OTHER_GPUS):
        return None
    listed = Path("/proc/driver/nvidia/gpus")
    count = len(list(listed.iterdir())) if listed.is_dir() else 0
    if count == 0 and any(Path("/dev").glob("nvidia[0-9]*")):
        return None  # device nodes without the driver's listing (a container): not counted
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"]))
    return count


def _missing(device: str) -> str | None:
    """Why `device` cannot be used here, or None when it can (or may)."""
    if device == "mps":
        return None if platform.system() == "Darwin" else "mps is Apple's GPU: this machine is not a Mac"
    if not device.startswith("cuda"):
        return None
    gpus = visible_cuda_gpus()
    index = int(device.partition(":")[2] or 0)
    if gpus is None or index < gpus:
        return None
    return "this machine has no CUDA GPU" if gpus == 0 else f"this machine has {gpus} CUDA GPU(s)"


def devices_exist_here(ctx: Context) -> Iterator[Problem]:
    """An eval stage run on this machine uses a torch device it has."""
    if not ctx.stages_run_here:
        return  # the eval stages run on the cluster (or, under the dry executor, nowhere)
    for stage, config, overrides in eval_configs(ctx.run):
        for field, device, _ in fields_of_kind(config, "device"):
            why = _missing(device)
            if why is not None:
                key = eval_key(stage, overrides, field)
                yield Problem(
                    key,
                    f"{key} is {device}, but {why} (the eval stage runs here)",
                    fix=f"set {key}=cpu",
                )


def choices_named_once(ctx: Context) -> Iterator[Problem]:
    """Every list of named choices in the config holds each choice once."""
    for key, names in _choice_lists(ctx):
        repeated = sorted({name for name in names if names.count(name) > 1}, key=names.index)
        if repeated:
            once = list(dict.fromkeys(names))
            yield Problem(
                key,
                f"{key} names {', '.join(repeated)} more than once: it is a set of choices (where it "
                "selects data, a repeat's tasks are prepared again and counted twice; elsewhere it is "
                "never needed, and more likely a typo for another choice)",
                fix=f"set {list_override(key, once)}",
            )


def _choice_lists(ctx: Context) -> Iterator[tuple[str, list[str]]]:
    for key, model, name, value in ctx.walk.fields:
        if isinstance(value, list) and _names_choices(type(model), name):
            yield key, value


@functools.cache
def _names_choices(model: type[BaseModel], name: str) -> bool:
    """`names_choices` of a field, read once per field (its annotation is the class's)."""
    return names_choices(model.model_fields[name].annotation)


def names_choices(annotation: Any) -> bool:
    """`list[Literal["a", ...]]` (optional or annotated too): a list of string choices."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return names_choices(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(names_choices(arm) for arm in get_args(annotation))
    if origin is not list:
        return False
    (item,) = get_args(annotation) or (None,)
    while get_origin(item) is Annotated:
        item = get_args(item)[0]
    return get_origin(item) is Literal and all(isinstance(c, str) for c in get_args(item))


RULES = (
    interpreters_exist_here,
    modules_installed_here,
    references_resolve_here,
    devices_exist_here,
    choices_named_once,
)
