"""slime's context caps passed through, where t3rl's episode loop holds the cap: one truth per setting.

t3rl's generate hook runs every episode of a train stage (and of its in-loop eval) under the stage's
`max_context_len`. slime's own `--rollout-max-context-len` and `--eval-max-context-len` cap only
slime's built-in rollout, which t3rl replaces: at the pinned commit slime reads them just to default
`--rollout-max-prompt-len` (and the eval's) to the cap - 1. Given raw in `model.architecture.extra_args`
they look like the cap while the episodes run under another one (or none), so a value other than the
stage's `max_context_len` is refused and moved there.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.schema import TrainStage

EXTRA = "model.architecture.extra_args"
CAPS = ("--rollout-max-context-len", "--eval-max-context-len")


def context_caps_are_the_stages(ctx: Context) -> Iterator[Problem]:
    """A context cap passed through to slime is every RL train stage's max_context_len."""
    extra = list(ctx.run.model.architecture.extra_args)
    stages = {
        name: stage.curriculum
        for name, stage in ctx.run.stages.items()
        if isinstance(stage, TrainStage) and stage.curriculum.mode == "rl"
    }
    for index, flag, values in argv_flags(extra):
        if flag not in CAPS or len(values) != 1 or not values[0].isdigit():
            continue
        cap = int(values[0])
        other = {name: cur.max_context_len for name, cur in stages.items() if cur.max_context_len != cap}
        if not other:
            continue
        end = index + (1 if "=" in extra[index] else 2)
        rest = list_override(EXTRA, [*extra[:index], *extra[end:]])
        moved = [
            f"stages.{name}.curriculum.max_context_len={cap}"
            for name in other
            if cap > stages[name].rollout_max_response_len
        ]
        theirs = ", ".join(f"{name}: {'null' if v is None else v}" for name, v in other.items())
        yield Problem(
            EXTRA,
            f"'{flag} {cap}' passes slime a context cap that t3rl's episodes do not run under: t3rl's "
            f"generate hook caps each episode at its stage's max_context_len ({theirs}; null: no cap), "
            f"and slime reads {flag} only as the default of its prompt-length filter",
            fix=f"set {rest} {' '.join(moved)}".rstrip()
            + ("" if len(moved) == len(other) else " (the cap must exceed rollout_max_response_len)"),
        )


RULES = (context_caps_are_the_stages,)
