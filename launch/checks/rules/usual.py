"""Values far above their field's usual range: valid, but almost never meant (a warning).

A numeric type may declare, beside the bounds its domain refuses, a `Usual` ceiling
(`t3rl_core.fields`): `Temperature`'s is 2, since OpenAI's chat API refuses more and above it an LLM
samples close to noise, so 50 is far likelier a typo for 0.5 than a plan. Every field of such a type is
found by its declaration, walking the validated config (each eval stage's settings and each train
stage's hardware with their own overrides too), and a value above the ceiling is warned about with the
type's typical value as the fix. `hardware.gpus_per_node` and `node_gpus` declare 16 (a node's GPUs).
`Seconds` declares a day, with a scale of 1000: a timeout typed in milliseconds gets the seconds meant.
A type may declare a floor as well (`least`): a timeout of a second or less (`Seconds`), a start-up wait
of less than 10 s (`StartupSeconds`) ends before what it waits for could; the floor is the fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.declared import run_fields_declaring
from launch.config.errors import Problem
from t3rl_core.fields import Usual


def values_in_their_usual_range(ctx: Context) -> Iterator[Problem]:
    """A number above its type's usual ceiling is warned about."""
    for key, (value, usual) in run_fields_declaring(ctx, Usual).items():
        problem = unusual(key, value, usual)
        if problem is not None:
            yield problem


def unusual(
    key: str, value: object, usual: Usual, fix_as: str | None = None, source: str = ""
) -> Problem | None:
    """The warning for `value` of `key` above `usual`'s ceiling, or None. `fix_as` words the fix with
    `{}` for the value meant (an option: "--tp {}"); by default `set <key>=<value>`."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if usual.least is not None and value < usual.least:
        return Problem(
            key,
            f"{key} is {value:g}, below the usual at least {usual.least:g}: {usual.least_why}",
            source=source,
            fix=f"{(fix_as or f'set {key}={{}}').format(f'{usual.least:g}')}, or the value you meant",
            severity="warning",
        )
    if value <= usual.most:
        return None
    scaled = value / usual.scale if usual.scale else None
    meant = scaled if scaled is not None and scaled <= usual.most else usual.typical
    return Problem(
        key,
        f"{key} is {value:g}, far above the usual at most {usual.most:g} ({usual.why}): is it a typo"
        + (f" for {scaled:g}?" if meant == scaled else "?"),
        source=source,
        fix=f"{(fix_as or f'set {key}={{}}').format(f'{meant:g}')}, or the value you meant",
        severity="warning",
    )


RULES = (values_in_their_usual_range,)
