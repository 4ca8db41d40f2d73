"""Importance sampling reads the rollout's log-probs as those of the tokens in the context they are
trained in. An env that trains some tokens in another context than they were sampled in declares it
(`EnvConfig.off_context_logprobs()`: tau2's repaired turns, trained in place of the failed turn they
were sampled after), and a stage that applies truncated importance sampling on them is refused."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from launch.config.schema import stage_sections


@per_scope
def importance_sampling_on_own_context(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """algorithm.use_tis with an env whose trained tokens may carry another context's log-probs."""
    cur = scope.curriculum
    if cur is None or scope.stage is None or cur.mode != "rl" or not cur.algorithm.use_tis:
        return
    try:
        env, _ = stage_sections(ctx.run, ctx.run.stages[scope.stage])  # type: ignore[arg-type]
    except ValueError:  # the stage's env overrides do not validate: another rule says so
        env = ctx.run.env
    field = env.off_context_logprobs()
    if field is None:
        return
    tis, env_key = scope.cur("algorithm.use_tis"), f"env.{field}"
    yield Problem(
        ctx.latest(tis, env_key),
        f"stage {scope.stage} applies truncated importance sampling (algorithm.use_tis) to the rollout "
        f"log-probs, but env {env.name} trains some tokens in another context than they were sampled in "
        f"({env_key}): their importance ratios would compare two different contexts",
        fix=f"set {env_key}=false (kept as context, not trained); or {tis}=false",
    )


RULES = (importance_sampling_on_own_context,)
