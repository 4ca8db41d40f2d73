"""What an SGLang engine's own flags do to the calls t3rl sends it, and to the trainer it serves.

- The KV pool (`--max-total-tokens`) bounds a request as the context does: SGLang's scheduler takes
  min(context, pool) - 1 as the longest request, refuses a longer prompt and cuts each request's
  max_new_tokens to the room left. A pool no larger than one call's budget (an RL stage's
  rollout_max_response_len, an eval's max_new_tokens) cuts every long call short of the length the config
  says, silently (`sglang.server_context_holds_a_call` reads the context the same way).
- The rollout engines compute in one number format with the trainer: slime trains in bf16 (fp16 with
  Megatron's --fp16) and copies its weights into engines that compute in `--sglang-dtype` (auto: the
  checkpoint's torch_dtype, bf16 for every shipped model). Another format on either side makes every
  rollout log-prob differ from the trainer's by rounding alone (the train/inference mismatch the
  `mismatch_metrics` log measures), and bf16-trained activations may overflow fp16's range.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.hf_config import read_hf_config

# sglang's reading of the servers t3rl starts and the call budgets each serves: one definition, shared so
# both bounds of a request (context, KV pool) are read over the same servers.
from launch.checks.rules.sglang import _eval_calls, _server_argvs
from launch.config.argv_tokens import argv_flags, flags_on, without_flag
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.schema import TrainStage
from launch.config.server_options import human_int, resolve

EXTRA = "model.architecture.extra_args"
POOL = "--max-total-tokens"


def kv_pool_holds_a_call(ctx: Context) -> Iterator[Problem]:
    """A server's KV pool is larger than the tokens one call may ask for."""
    calls = [
        (s.cur("rollout_max_response_len"), s.curriculum.rollout_max_response_len)
        for s in ctx.scopes
        if s.curriculum
    ]
    for key, argv, prefix, own_model in _server_argvs(ctx):
        if not own_model:
            continue  # a service of another model: its calls are not this config's
        for _, flag, values in argv_flags(argv):
            if not flag.startswith(prefix) or resolve("--" + flag.removeprefix(prefix)) != POOL:
                continue
            try:
                pool = human_int(values[0]) if len(values) == 1 else None
            except ValueError:
                continue  # refused by its type (server_options)
            own = calls if prefix == "--sglang-" else _eval_calls(ctx, key)
            cut = [(source, tokens) for source, tokens in own if pool is not None and tokens >= pool]
            if not cut:
                continue
            source, tokens = max(cut, key=lambda pair: pair[1])
            yield Problem(
                ctx.latest(key, source),
                f"{flag} {values[0]} makes the KV pool of each engine smaller than the {tokens} tokens "
                f"{source} lets one call write: SGLang cuts every request's max_new_tokens to the room "
                "the pool leaves (and refuses a prompt that fills it), so long calls end short of the "
                "length the config says",
                fix=f"set {list_override(key, without_flag(argv, flag))} (SGLang sizes the pool from its "
                f"memory fraction); or set {source}={pool // 2}",
            )


# SGLang's --dtype words (and config.json's torch_dtype) by the format they compute in, and back.
_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}
_WORD = {"fp16": "float16", "bf16": "bfloat16"}


def _engine_dtype(extra: list[str]) -> str | None:
    """The value of --sglang-dtype (or an abbreviation SGLang's argparse takes for it), the last given."""
    given = None
    for _, flag, values in argv_flags(extra):
        if flag.startswith("--sglang-") and resolve("--" + flag.removeprefix("--sglang-")) == "--dtype":
            given = values[0] if len(values) == 1 else None
    return given


def engines_compute_in_the_trainers_format(ctx: Context) -> Iterator[Problem]:
    """The rollout engines' --sglang-dtype is the number format Megatron trains in."""
    if not any(isinstance(s, TrainStage) for s in ctx.run.stages.values()):
        return  # no rollout engines: an eval's server has its own --dtype, for its own reasons
    extra = list(ctx.run.model.architecture.extra_args)
    trainer = "fp16" if "--fp16" in flags_on(extra) else "bf16"
    given = _engine_dtype(extra)
    hf = read_hf_config(ctx.run.model.hf_checkpoint)
    stated = hf.get("torch_dtype") if hf is not None else None
    # auto: the checkpoint's own format (bf16 for every shipped model and a download not made yet)
    engine = _DTYPES.get(given or "") or (_DTYPES.get(stated, "bf16") if given in (None, "auto") else None)
    if engine is None or engine == trainer:
        return
    flag = "--sglang-dtype"
    shown = (
        f"{flag} {given}" if given not in (None, "auto") else "the checkpoint's own, as --sglang-dtype auto"
    )
    fix = (
        f"set {list_override(EXTRA, without_flag(extra, flag))} (the checkpoint's bf16 on both sides)"
        if trainer == "bf16" and stated in (None, "bfloat16")
        else f"set {list_override(EXTRA, [*without_flag(extra, flag), flag, _WORD[trainer]])}"
    )
    overflow = " (and bf16-trained activations may overflow fp16's range)" if engine == "fp16" else ""
    yield Problem(
        EXTRA,
        f"the rollout engines compute in {engine} ({shown}) while Megatron trains in {trainer}: every "
        "rollout log-prob differs from the trainer's by rounding alone, which the importance ratios and the "
        f"KL read as a change of policy{overflow}",
        fix=fix,
        severity="warning",
    )


RULES = (kv_pool_holds_a_call, engines_compute_in_the_trainers_format)
