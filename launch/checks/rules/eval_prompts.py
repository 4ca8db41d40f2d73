"""An eval split's prompts against the eval's own token budget, measured in a user's dataset file.

`prompt_lengths` holds a train stage's prompts to the limits they must fit in; an eval stage has limits
of its own: its tokens per call (`eval.max_new_tokens`, else the per-call length of the curriculum its
runtime config comes from, else the runtime's 1024) must fit in the model's context after the prompt,
or SGLang refuses every such request, and the curriculum's `max_context_len` caps its episodes too.
The prompts are measured as there (their words: a lower bound of their tokens); an eval whose
measured prompts all reach a limit is refused, one where most do is warned about.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.rules.prompt_lengths import Limit, measured, over_limit
from launch.config.errors import Problem
from launch.config.schema import ConvertTorchDistToHfStage, CurriculumConfig, EvalStage, RunConfig, TrainStage
from t3rl_core.config import RolloutConfig
from t3rl_core.eval.config import EvalConfig

CONTEXT = "model.context_length"


def _curriculum(run: RunConfig, stage: str | None) -> tuple[str, CurriculumConfig] | None:
    """The train stage (and its curriculum) whose runtime settings the eval stage runs with: the one its
    checkpoint was trained by, else the run's first (`PlanBuilder.runtime_config`)."""
    spec = run.stages.get(stage or "")
    if isinstance(spec, EvalStage) and spec.checkpoint is not None:
        source = run.stages.get(spec.checkpoint)
        trained = run.stages.get(source.source) if isinstance(source, ConvertTorchDistToHfStage) else None
        if isinstance(trained, TrainStage) and source is not None:
            return source.source, trained.curriculum  # type: ignore[union-attr]
    return next(((n, s.curriculum) for n, s in run.stages.items() if isinstance(s, TrainStage)), None)


def _limits(
    ctx: Context, stage: str | None, config: EvalConfig, overrides: Mapping[str, Any], longest: int
) -> Iterator[Limit]:
    trained = _curriculum(ctx.run, stage)
    cur = trained[1] if trained else None
    per_call = config.max_new_tokens or (
        (cur.eval_max_response_len or cur.rollout_max_response_len) if cur else RolloutConfig().max_new_tokens
    )
    context, tokens = ctx.run.model.context_length, eval_key(stage, overrides, "max_new_tokens")
    if context is not None and "--allow-auto-truncate" not in config.server.extra_args:
        room = context - longest - 1
        yield Limit(
            context - per_call,
            ctx.latest(tokens, CONTEXT) if config.max_new_tokens else CONTEXT,
            f"with {per_call} tokens per call they do not fit in {ctx.run.model.name}'s context of {context} "
            "tokens, and SGLang refuses such a request",
            fix=f"set {tokens}={room}"
            if room >= 1
            else "use a model with a longer context or a dataset of shorter prompts",
        )
    if trained is not None and trained[1].max_context_len is not None:
        key = f"stages.{trained[0]}.curriculum.max_context_len"
        yield Limit(
            trained[1].max_context_len,
            key,
            f"the eval's episodes run under {key} {trained[1].max_context_len}, which leaves no tokens to "
            "generate after such a prompt",
            fix=f"set {key}={longest + per_call}"
            if context is None or longest + per_call <= context
            else f"set {key}=null",
        )


def eval_prompts_fit(ctx: Context) -> Iterator[Problem]:
    """The prompts of the split an eval stage scores leave room under each of its limits."""
    for stage, config, overrides in eval_configs(ctx.run):
        if config.engine.name not in ("sglang", "hf"):
            continue  # the scripted policy reads no prompt
        for prompts in measured(ctx, config.split):
            for limit in _limits(ctx, stage, config, overrides, max(prompts.words)):
                yield from over_limit(ctx, prompts, limit, f"eval split {config.split}")


RULES = (eval_prompts_fit,)
