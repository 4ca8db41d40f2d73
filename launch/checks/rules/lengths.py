"""Lengths against the model's context (`model.context_length`, its HF max_position_embeddings): one
model call's tokens, an episode's cap and an eval's per-call budget must leave room in it, or SGLang
refuses the request mid-rollout. A local checkpoint's config.json must agree with the declared length."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.hf_config import read_hf_config
from launch.config.errors import Problem

CONTEXT = "model.context_length"


@per_scope
def calls_fit_the_context(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A call's tokens (and a prompt before them) and an episode's cap fit the model's context."""
    context, cur = ctx.run.model.context_length, scope.curriculum
    if context is None or cur is None:
        return
    for field in ("rollout_max_response_len", "eval_max_response_len"):
        value = getattr(cur, field)
        if value is not None and value >= context:
            key = ctx.latest(scope.cur(field), CONTEXT)
            yield Problem(
                key,
                f"{field} {value} leaves no room for a prompt in {ctx.run.model.name}'s context of {context} "
                "tokens: SGLang refuses such a request",
                fix=f"set {scope.cur(field)}={context // 2}",
            )
    if cur.max_context_len is not None and cur.max_context_len > context:
        key = ctx.latest(scope.cur("max_context_len"), CONTEXT)
        yield Problem(
            key,
            f"max_context_len {cur.max_context_len} is more than {ctx.run.model.name}'s context of {context} "
            "tokens: episodes would grow past what the model attends over",
            fix=f"set {scope.cur('max_context_len')}={context}",
        )


def eval_calls_fit_the_context(ctx: Context) -> Iterator[Problem]:
    """An eval's tokens per call leave room for a prompt in the model's context."""
    context = ctx.run.model.context_length
    if context is None:
        return
    for stage, config, overrides in eval_configs(ctx.run):
        if config.engine.name == "reference":
            continue  # the scripted policy replays gold actions: no model reads its context
        if config.max_new_tokens is not None and config.max_new_tokens >= context:
            key = eval_key(stage, overrides, "max_new_tokens")
            yield Problem(
                ctx.latest(key, CONTEXT),
                f"max_new_tokens {config.max_new_tokens} leaves no room for a prompt in "
                f"{ctx.run.model.name}'s context of {context} tokens",
                fix=f"set {key}={context // 2}",
            )


def context_matches_checkpoint(ctx: Context) -> Iterator[Problem]:
    """A local checkpoint's max_position_embeddings is the declared context length."""
    model = ctx.run.model
    hf = None if model.synthetic or model.context_length is None else read_hf_config(model.hf_checkpoint)
    theirs = (hf or {}).get("max_position_embeddings")
    if isinstance(theirs, int) and theirs != model.context_length:
        yield Problem(
            CONTEXT,
            f"{CONTEXT} is {model.context_length}, but {model.hf_checkpoint}/config.json has "
            f"max_position_embeddings {theirs}",
            fix=f"set {CONTEXT}={theirs}",
        )


RULES = (calls_fit_the_context, eval_calls_fit_the_context, context_matches_checkpoint)
