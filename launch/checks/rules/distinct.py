"""Lists declared sets (`t3rl_core.fields.Distinct`: an eval's `categories` and `pass_k`): each item once.

A repeat is never needed (a category filter keeps a row once, pass@k is reported once per k) and is
more likely a typo for another item. Every such field is found by its declaration, walking the
validated config and each eval stage's own settings; a repeat is refused with the distinct items.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from launch.config.fixes import list_override
from t3rl_core.fields import Distinct


def _distinct(metadata: list[Any], annotation: Any) -> bool:
    """Whether a field declares `Distinct`: on itself, or on an arm of an optional."""
    arms = [a.__metadata__ for a in get_args(annotation) if get_origin(a) is Annotated]
    return any(isinstance(m, Distinct) for m in [*metadata, *(m for arm in arms for m in arm)])


def _sets(node: Any, prefix: str, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, list[Any]]]:
    """(dotted key, items) of every list under `node` declared a set."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _sets(value, f"{prefix}{name}.")
    if not isinstance(node, BaseModel):
        return
    for name, field in type(node).model_fields.items():
        value = getattr(node, name)
        if name in skip:
            continue
        if isinstance(value, list) and _distinct(field.metadata, field.annotation):
            yield f"{prefix}{name}", value
        elif isinstance(value, BaseModel | dict):
            yield from _sets(value, f"{prefix}{name}.")


def sets_name_each_item_once(ctx: Context) -> Iterator[Problem]:
    """A list declared a set holds each item once."""
    found = dict(_sets(ctx.run, "", frozenset({"eval"})))
    for stage, config, overrides in eval_configs(ctx.run):
        for field, items in _sets(config, ""):
            found.setdefault(eval_key(stage, overrides, field), items)
    for key, items in found.items():
        repeated = [item for i, item in enumerate(items) if item in items[:i]]
        if repeated:
            once = list(dict.fromkeys(items))
            yield Problem(
                key,
                f"{key} names {', '.join(map(str, dict.fromkeys(repeated)))} more than once: it is a set "
                "(a repeat changes nothing, and is more likely a typo for another item)",
                fix=f"set {list_override(key, once)}"
                if all(isinstance(item, str) for item in once)
                else f"set {key}=[{','.join(map(str, once))}]",
            )


RULES = (sets_name_each_item_once,)
