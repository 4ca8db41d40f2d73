"""A list of named choices (a field typed `list[Literal["a", "b", ...]]`: BFCL's categories, tau2's
domains and splits, augmentation kinds, a sandbox's required layers) names a set: each choice once. A
repeated one is no error to pydantic, but where the list selects data (categories, domains) the data
preparation writes its tasks twice, so a split holds duplicates that a batch samples and an eval counts
twice. Found by the field's type, walking the validated config, so a new list of choices is checked by
declaring it so.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.fixes import list_override


def choices_named_once(ctx: Context) -> Iterator[Problem]:
    """Every list of named choices in the config holds each choice once."""
    for key, names in _choice_lists(ctx.run, ""):
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


def _choice_lists(node: Any, prefix: str) -> Iterator[tuple[str, list[str]]]:
    if isinstance(node, BaseModel):
        for name, field in type(node).model_fields.items():
            value = getattr(node, name)
            key = f"{prefix}{name}"
            if isinstance(value, list) and names_choices(field.annotation):
                yield key, value
            else:
                yield from _choice_lists(value, f"{key}.")
    elif isinstance(node, dict):
        for name, value in node.items():
            yield from _choice_lists(value, f"{prefix}{name}.")


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


RULES = (choices_named_once,)
