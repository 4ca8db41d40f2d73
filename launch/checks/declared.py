"""Fields found by a marker their type declares (`t3rl_core.fields.Usual`, `Distinct`), walking the
validated config: the rules that read such a declaration share this walk, so a field added later is
checked by declaring its type, not by a rule naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, TypeVar, get_args, get_origin

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
    for name, field in type(node).model_fields.items():
        if name in skip:
            continue
        value = getattr(node, name)
        found = declared(field.metadata, field.annotation, marker)
        if found is not None:
            yield f"{prefix}{name}", value, found
        elif isinstance(value, BaseModel | dict):
            yield from fields_declaring(value, marker, f"{prefix}{name}.")


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
