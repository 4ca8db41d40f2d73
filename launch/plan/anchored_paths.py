"""Relative paths of a config section, anchored at the directory t3rl was started in.

A stage runs in a directory of its own (the local executor starts it in its stage directory; a train
job `cd`s into the slime checkout), so a relative path in the runtime config a stage reads would be
looked up there: not where the user typed it, nor where pre-flight probed it (a dataset file read fine
at `t3rl validate` was then missing when the data stage ran). Every str field of a path kind
(`t3rl_core.fields.LocalPath`, `OutputDir`), on its own, in a list or as a dict's value, is made
absolute against the launcher's working directory before a stage's files are written, so that a
relative path means one place wherever it is read; so is a chat template (`TemplateRef`) naming a
.jinja file, and a model reference (`ModelRef`) naming a directory here (else it is a hub id). `~` is
left to the reader (expanded where it runs).
"""

from __future__ import annotations

import functools
import types
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel

from t3rl_core.fields import StrKind

ANCHORED_KINDS = frozenset({"path", "output dir", "model dir"})
# Kinds that are a path only for some values: a shipped template's name or a hub id stays as it is.
TEMPLATE, MODEL = "chat template", "model reference"
M = TypeVar("M", bound=BaseModel)


def anchored(model: M, base: Path) -> M:
    """`model` with every relative path of a path kind under it made absolute against `base`."""
    update = {}
    for name, annotation, kinds in _fields(type(model)):
        value = getattr(model, name)
        if value is None or isinstance(value, int | float):  # no path in it (bool is an int)
            continue
        new = _anchor(value, annotation, kinds, base)
        if new is not value:
            update[name] = new
    return model.model_copy(update=update) if update else model


@functools.cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, Any, frozenset[str]], ...]:
    """(name, annotation, the str kinds its metadata declares) of each field of `model`, read once per
    class: each of the ~10 models of a runtime config a plan anchors read its fields' kinds anew."""
    return tuple(
        (name, field.annotation, frozenset(m.name for m in field.metadata if isinstance(m, StrKind)))
        for name, field in model.model_fields.items()
    )


def _anchor(value: Any, annotation: Any, kinds: frozenset[str], base: Path) -> Any:
    if isinstance(value, BaseModel):
        return anchored(value, base)
    declared, item, mapped = _parts(annotation)
    if isinstance(value, str):
        return _anchor_text(value, kinds | declared, base)
    if isinstance(value, list) and item is not None:
        new = [_anchor(v, item, frozenset(), base) for v in value]
        return new if any(a is not b for a, b in zip(new, value, strict=True)) else value
    if isinstance(value, dict) and mapped is not None:
        changed = {k: _anchor(v, mapped, frozenset(), base) for k, v in value.items()}
        return changed if any(changed[k] is not v for k, v in value.items()) else value
    return value


# `_parts` of each annotation met, by its id, beside the annotation itself (kept alive, so its id is not
# reused): a plan anchors ~220 values, each through its field's annotation, twice a cold `t3rl plan`.
_PARTS: dict[int, tuple[Any, tuple[frozenset[str], Any, Any]]] = {}


def _parts(annotation: Any) -> tuple[frozenset[str], Any, Any]:
    """(the str kinds declared on `annotation` itself, a list's item type, a dict's value type)."""
    known = _PARTS.get(id(annotation))
    if known is None or known[0] is not annotation:
        known = _PARTS[id(annotation)] = (annotation, _read_parts(annotation))
    return known[1]


def _read_parts(annotation: Any) -> tuple[frozenset[str], Any, Any]:
    kinds: set[str] = set()
    item = mapped = None
    stack = [annotation]
    while stack:
        current = stack.pop()
        origin = get_origin(current)
        if origin is Annotated:
            kinds |= {m.name for m in current.__metadata__ if isinstance(m, StrKind)}
            stack.append(get_args(current)[0])
        elif origin in (Union, types.UnionType):
            stack.extend(get_args(current))
        elif origin is list:
            item = get_args(current)[0]
        elif origin is dict:
            mapped = get_args(current)[1]
    return frozenset(kinds), item, mapped


def _anchor_text(value: str, kinds: frozenset[str], base: Path) -> str:
    """A str of these kinds, anchored when it is a relative path: always for a path kind, for a chat
    template when it names a .jinja file, for a model reference when it names a directory here."""
    if kinds & ANCHORED_KINDS or (TEMPLATE in kinds and value.endswith(".jinja")):
        return _absolute(value, base)
    return local_or_hub(value, base) if MODEL in kinds else value


def _absolute(value: str, base: Path) -> str:
    if not value or value.startswith("~") or "://" in value or Path(value).is_absolute():
        return value
    return str(base / value)


def local_or_hub(value: str, base: Path) -> str:
    """A model reference (`ModelRef`: a local directory, or a hub id org/name): a relative path naming a
    directory under `base` is anchored there; anything else is a hub id, left as is."""
    return _absolute(value, base) if (base / value).is_dir() else value
