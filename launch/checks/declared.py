"""Fields found by a marker their type declares (`t3rl_core.fields.Usual`, `Distinct`), walking the
validated config: the rules that read such a declaration share this walk, so a field added later is
checked by declaring its type, not by a rule naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key

# The per-class table of what fields declare is launch.config's, which the secret walk reads too.
from launch.config.declared_fields import markers, walked

__all__ = ["declared", "fields_declaring", "markers", "run_fields_declaring", "walked"]

T = TypeVar("T")


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
