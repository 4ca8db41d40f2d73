"""What a config model class's fields declare and which of them a walk of the validated config must
read, read once per class: the pre-flight rules walk the config for a marker their fields declare
(`t3rl_core.fields.Usual`, `Distinct`, `ReadWhen`: launch.checks.declared), and the secret masking and
the credential probe walk it for every `t3rl_core.secret.Secret` (launch.config.secrets.secrets_in).
Here, not under launch.checks, so that launch.config reads the same table without importing the
checks; pydantic itself is not imported (a model class's `model_fields` is all that is read)."""

from __future__ import annotations

import functools
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


def markers(metadata: list[Any], annotation: Any, marker: type[T]) -> list[T]:
    """The `marker`s a field declares: on itself, or on an arm of an optional (`Temperature | None`)."""
    arms = [a.__metadata__ for a in get_args(annotation) if get_origin(a) is Annotated]
    return [m for m in [*metadata, *(m for arm in arms for m in arm)] if isinstance(m, marker)]


@functools.cache
def walked(model: type, marker: type[T]) -> tuple[tuple[str, T | None], ...]:
    """(name, the first `marker` it declares or None) of each field of `model` a walk for `marker` must
    read: those declaring it and those whose type may hold a model or a dict (`_may_nest`). A field of
    neither kind (an int, an optional str, a list) is left out: a walk would only pass it by."""
    table = _tables(model)
    if not any(issubclass(kind, marker) for kind in table.kinds):
        return table.nesting  # nothing here declares it (most classes, for most markers)
    return tuple(
        (name, next((m for m in marks if isinstance(m, marker)), None))
        for name, marks, nests, _ in table.rows
        if nests or any(isinstance(m, marker) for m in marks)
    )


@functools.cache
def fields_holding(model: type, kind: type) -> tuple[str, ...]:
    """The fields of `model` whose validated value may hold a `kind` at any depth: typed with it (alone,
    optional, in a list, tuple or dict), or with a type that may hold a model or a dict, itself or in a
    list. A walk for `kind`'s values reads these and passes the others by (an int, a str, a list of str)."""
    return tuple(name for name, _, _, annotation in _tables(model).rows if _may_hold(annotation, kind))


class _Table:
    """What a model class's fields declare, read once per class and shared by every marker's walk: the
    rules walk the config for Docker images, usual ranges, sets, unread settings and string kinds, and
    each read every field's declarations at every walk (~4.7 M instructions a walk on a cold plan)."""

    __slots__ = ("kinds", "nesting", "rows")

    def __init__(self, model: type) -> None:
        # (name, everything the field declares in `markers`' order, whether it may hold a model or dict,
        # its type)
        self.rows = tuple(
            (name, tuple(markers(f.metadata, f.annotation, object)), _may_nest(f.annotation), f.annotation)
            for name, f in model.model_fields.items()  # type: ignore[attr-defined]
        )
        self.kinds = frozenset(type(m) for _, marks, _, _ in self.rows for m in marks)
        self.nesting: tuple[tuple[str, None], ...] = tuple(
            (name, None) for name, _, nests, _ in self.rows if nests
        )


@functools.cache
def _tables(model: type) -> _Table:
    return _Table(model)


# Types whose validated values are never a model or a dict (exactly these: a subclass may validate
# into anything its own schema says).
_PLAIN = frozenset({int, float, str, bytes, bool, NoneType})
# Containers pydantic validates into themselves: a list or tuple is no model or dict, whatever it holds
# (the marker walk does not look inside them).
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


def _may_hold(annotation: Any, kind: type) -> bool:
    """Whether a value of this type may hold a `kind`: `_may_nest`, looking into sequences too (a list of
    models may hold one in an item; a list of str may not)."""
    if annotation is kind:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _may_hold(get_args(annotation)[0], kind)
    if origin is Union or origin is UnionType:
        return any(_may_hold(arm, kind) for arm in get_args(annotation))
    if origin in _SEQUENCES:
        items = [arm for arm in get_args(annotation) if arm is not Ellipsis]
        return not items or any(_may_hold(arm, kind) for arm in items)  # a bare list may hold anything
    return _may_nest(annotation)
