"""algorithm.credit against what its declaration (t3rl_core.credit) says it needs: the env's outcome
fields, the estimator, the mode, a group to normalise over, and slime's one advantage hook and reward
post-process (which the KL-in-reward GRPO and a reward shape's own post-process also take)."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from launch.config.schema import stage_sections
from t3rl_core.counts import counted
from t3rl_core.credit import CREDITS


@per_scope
def credit_has_what_it_needs(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A credit the stage's env, estimator, mode, group size or other hooks cannot support."""
    cur = scope.curriculum
    if cur is None or scope.stage is None:
        return
    algo, credit = cur.algorithm, CREDITS[cur.algorithm.credit]
    key, undo = scope.cur("algorithm.credit"), f"set {scope.cur('algorithm.credit')}=trajectory"
    if cur.mode not in credit.MODES:
        yield Problem(
            ctx.latest(key, scope.cur("mode")),
            f"algorithm.credit={algo.credit} builds policy-gradient advantages; mode {cur.mode} has none",
            fix=undo,
        )
        return
    try:
        env, reward = stage_sections(ctx.run, ctx.run.stages[scope.stage])  # type: ignore[arg-type]
    except ValueError:  # the stage's env/reward overrides do not validate: another rule says so
        env, reward = ctx.run.env, ctx.run.reward
    provided = type(env).OUTCOME_FIELDS
    missing = sorted(credit.NEEDS_OUTCOME - provided) if provided is not None else []
    if missing:
        yield Problem(
            ctx.latest(key, "env.name"),
            f"algorithm.credit={algo.credit} reads outcome fields {missing} that env {env.name} does not "
            "provide (a world that rewards turns reports turn_rewards and turn_steps)",
            fix=undo,
        )
    if credit.ESTIMATORS is not None and algo.advantage_estimator not in credit.ESTIMATORS:
        yield Problem(
            ctx.latest(key, scope.cur("algorithm.advantage_estimator")),
            f"algorithm.credit={algo.credit} replaces the advantages of {', '.join(credit.ESTIMATORS)}, "
            f"not {algo.advantage_estimator}'s",
            fix=f"set {scope.cur('algorithm.advantage_estimator')}={credit.ESTIMATORS[0]}, or {undo[4:]}",
        )
    if cur.n_samples_per_prompt < credit.MIN_GROUP:
        yield Problem(
            ctx.latest(key, scope.cur("n_samples_per_prompt")),
            f"algorithm.credit={algo.credit} normalises within a prompt's group of samples; "
            f"n_samples_per_prompt {counted(cur.n_samples_per_prompt, 'leaf', 'leaves')} nothing to compare",
            fix=f"set {scope.cur('n_samples_per_prompt')}={max(credit.MIN_GROUP, 8)}, or {undo[4:]}",
        )
    if credit.ADVANTAGE_HOOK and algo.kl_in_reward is not None:
        yield Problem(
            ctx.latest(key, scope.cur("algorithm.kl_in_reward")),
            f"algorithm.credit={algo.credit} and algorithm.kl_in_reward both replace slime's advantages "
            "through its one advantage hook",
            fix=f"set {scope.cur('algorithm.kl_in_reward')}=null, or {undo[4:]}",
        )
    post_process = getattr(type(reward), "slime_reward_post_process", None)
    if credit.ADVANTAGE_HOOK and post_process is not None:
        yield Problem(
            ctx.latest(key, "reward.name"),
            f"algorithm.credit={algo.credit} computes its advantages in slime's reward post-process, which "
            f"reward {reward.name} takes for its own ({post_process})",
            fix=undo,
        )


RULES = (credit_has_what_it_needs,)
