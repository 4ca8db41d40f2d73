"""Fields found by a marker their type declares (`t3rl_core.fields.Usual`, `Distinct`), walking the
validated config: the rules that read such a declaration share this walk, so a field added later is
checked by declaring its type, not by a rule naming it."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key

T = TypeVar("T")


def markers(metadata: list[Any], annotation: Any, marker: type[T]) -> list[T]:
    """The `marker`s a field declares: on itself, or on an arm of an optional (`Temperature | None`)."""
    arms = [a.__metadata__ for a in get_args(annotation) if get_origin(a) is Annotated]
    return [m for m in [*metadata, *(m for arm in arms for m in arm)] if isinstance(m, marker)]


def declared(metadata: list[Any], annotation: Any, marker: type[T]) -> T | None:
    """The first `marker` a field declares (`markers`), or None."""
    found = markers(metadata, annotation, marker)
    return found[0] if found else None


def fields_declaring(
    node: Any, marker: type[T], prefix: str = "", skip: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Any, T]]:
    """(dotted key, value, the marker) of every field under `node` (models, maps of them) whose type
    declares `marker`; fields named in `skip` are left out at the top."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from fields_declaring(value, marker, f"{prefix}{name}.")
    if not isinstance(node, BaseModel):
        return
    for name, found in walked(type(node), marker):
        if name in skip:
            continue
        value = getattr(node, name)
        if found is not None:
            yield f"{prefix}{name}", value, found
        elif isinstance(value, BaseModel | dict):
            yield from fields_declaring(value, marker, f"{prefix}{name}.")


@functools.cache
def walked(model: type[BaseModel], marker: type[T]) -> tuple[tuple[str, T | None], ...]:
    """(name, the first `marker` it declares or None) of each field of `model` a walk for `marker` must
    read: those declaring it and those whose type may hold a model or a dict (`_may_nest`). A field of
    neither kind (an int, an optional str, a list) is left out: a walk would only pass it by."""
    table = _tables(model)
    if not any(issubclass(kind, marker) for kind in table.kinds):
        return table.nesting  # nothing here declares it (most classes, for most markers)
    return tuple(
        (name, next((m for m in marks if isinstance(m, marker)), None))
        for name, marks, nests in table.rows
        if nests or any(isinstance(m, marker) for m in marks)
    )


class _Table:
    """What a model class's fields declare, read once per class and shared by every marker's walk: the
    rules walk the config for Docker images, usual ranges, sets, unread settings and string kinds, and
    each read every field's declarations at every walk (~4.7 M instructions a walk on a cold plan)."""

    __slots__ = ("kinds", "nesting", "rows")

    def __init__(self, model: type[BaseModel]) -> None:
        # (name, everything the field declares in `markers`' order, whether it may hold a model or dict)
        self.rows = tuple(
            (name, tuple(markers(f.metadata, f.annotation, object)), _may_nest(f.annotation))
            for name, f in model.model_fields.items()
        )
        self.kinds = frozenset(type(m) for _, marks, _ in self.rows for m in marks)
        self.nesting: tuple[tuple[str, None], ...] = tuple(
            (name, None) for name, _, nests in self.rows if nests
        )


@functools.cache
def _tables(model: type[BaseModel]) -> _Table:
    return _Table(model)


# Types whose validated values are never a model or a dict (exactly these: a subclass may validate
# into anything its own schema says).
_PLAIN = frozenset({int, float, str, bytes, bool, NoneType})
# Containers pydantic validates into themselves: a list or tuple is no model or dict, whatever it holds
# (the walk does not look inside them).
_SEQUENCES = frozenset({list, tuple, set, frozenset})


def _may_nest(annotation: Any) -> bool:
    """Whether a field of this type may hold a model or a dict: anything not known to be plain may."""
    if annotation is None or (type(annotation) is type and annotation in _PLAIN):
        return False
    origin = get_origin(annotation)
    if origin is Annotated:
        return _may_nest(get_args(annotation)[0])
    if origin is Union or origin is UnionType:
        return any(_may_nest(arm) for arm in get_args(annotation))
    return origin is not Literal and origin not in _SEQUENCES


def run_fields_declaring(ctx: Context, marker: type[T]) -> dict[str, tuple[Any, T]]:
    """Key → (value, marker) of every such field a stage runs with: the config's, each eval stage's
    own settings and each train stage's hardware with their overrides (under the key one would set)."""
    found = {key: (value, m) for key, value, m in fields_declaring(ctx.run, marker, skip=frozenset({"eval"}))}
    for stage, config, overrides in eval_configs(ctx.run):
        for field, value, m in fields_declaring(config, marker):
            found.setdefault(eval_key(stage, overrides, field), (value, m))
    for scope in ctx.scopes:
        for field, value, m in fields_declaring(scope.hardware, marker):
            found.setdefault(scope.hw(field), (value, m))
    return found
