"""Values far above their field's usual range: valid, but almost never meant (a warning).

A numeric type may declare, beside the bounds its domain refuses, a `Usual` ceiling
(`t3rl_core.fields`): `Temperature`'s is 2, since OpenAI's chat API refuses more and above it an LLM
samples close to noise, so 50 is far likelier a typo for 0.5 than a plan. Every field of such a type is
found by its declaration, walking the validated config (each eval stage's settings and each train
stage's hardware with their own overrides too), and a value above the ceiling is warned about with the
type's typical value as the fix. `hardware.gpus_per_node` and `node_gpus` declare 16 (a node's GPUs).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from t3rl_core.fields import Usual


def _usual(metadata: list[Any], annotation: Any) -> Usual | None:
    """The `Usual` a field declares: on itself, or on an arm of an optional (`Temperature | None`)."""
    found = [m for m in metadata if isinstance(m, Usual)]
    for arm in get_args(annotation):
        if get_origin(arm) is Annotated:
            found += [m for m in arm.__metadata__ if isinstance(m, Usual)]
    return found[0] if found else None


def _above(node: Any, prefix: str, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, float, Usual]]:
    """(dotted key, value, its Usual) of every number under `node` above its declared usual ceiling."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _above(value, f"{prefix}{name}.")
    if not isinstance(node, BaseModel):
        return
    for name, field in type(node).model_fields.items():
        if name in skip:
            continue
        value = getattr(node, name)
        usual = _usual(field.metadata, field.annotation)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if usual is not None and number and value > usual.most:
            yield f"{prefix}{name}", value, usual
        elif isinstance(value, BaseModel | dict):
            yield from _above(value, f"{prefix}{name}.")


def values_in_their_usual_range(ctx: Context) -> Iterator[Problem]:
    """A number above its type's usual ceiling is warned about."""
    found = dict((key, (value, usual)) for key, value, usual in _above(ctx.run, "", frozenset({"eval"})))
    for stage, config, overrides in eval_configs(ctx.run):
        for field, value, usual in _above(config, ""):
            found.setdefault(eval_key(stage, overrides, field), (value, usual))
    for scope in ctx.scopes:  # a train stage's hardware with its own overrides
        for field, value, usual in _above(scope.hardware, ""):
            found.setdefault(scope.hw(field), (value, usual))
    for key, (value, usual) in found.items():
        yield Problem(
            key,
            f"{key} is {value:g}, far above the usual at most {usual.most:g} ({usual.why}): is it a typo?",
            fix=f"set {key}={usual.typical:g}, or the value you meant",
            severity="warning",
        )


RULES = (values_in_their_usual_range,)
