"""What SGLang would refuse later, read from what SGLang declares (its option table, its sampling
domains) instead of a list of mistakes:

- slime's `--sglang-*` flags in `model.architecture.extra_args` start every rollout engine: they are
  checked like an eval server's flags (`launch.plan.server_options`), each engine `gpus_per_engine`
  GPUs of tensor parallelism;
- slime's sampling flags in the same argv reach SGLang with every request: a value outside SGLang's
  sampling domain (`sglang_names.SAMPLING_DOMAINS`) fails the first rollout;
- greedy rollouts (temperature 0, which SGLang accepts) make the samples of a prompt identical: with a
  group baseline every advantage is 0;
- an eval's top_p / top_k next to temperature 0: greedy decoding ignores them.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.sglang_names import SAMPLING_DOMAINS
from launch.config.algorithms import ESTIMATORS, filter_declaration
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.plan.server_options import server_argv_problems
from launch.plan.slime_options import argv_flags

EXTRA = "model.architecture.extra_args"
# slime's sampling flags (slime/utils/arguments.py) → the SGLang sampling parameter each one sets.
SLIME_SAMPLING = {
    "--rollout-temperature": "temperature",
    "--rollout-top-p": "top_p",
    "--rollout-top-k": "top_k",
    "--eval-temperature": "temperature",
    "--eval-top-p": "top_p",
    "--eval-top-k": "top_k",
    "--eval-min-new-tokens": "min_new_tokens",
}


def slime_sglang_flags(ctx: Context) -> Iterator[Problem]:
    """slime's `--sglang-*` pass-through flags are what SGLang's server parses and accepts."""
    hw = ctx.run.hardware
    yield from server_argv_problems(
        ctx.run.model.architecture.extra_args,
        EXTRA,
        tp=hw.gpus_per_engine,
        gpus=hw.gpus_per_engine,
        context_length=ctx.run.model.context_length,
        prefix="--sglang-",
    )


def slime_sampling_flags(ctx: Context) -> Iterator[Problem]:
    """slime's sampling flags hold values SGLang's SamplingParams.verify accepts."""
    extra = ctx.run.model.architecture.extra_args
    for index, flag, values in argv_flags(extra):
        parameter = SLIME_SAMPLING.get(flag)
        if parameter is None or len(values) != 1:
            continue
        test, says = SAMPLING_DOMAINS[parameter]
        try:
            ok = test(float(values[0]))
        except ValueError:
            continue  # not a number: slime's option table refuses it (launch.plan.slime_options)
        if not ok:
            end = index + 1 + (0 if "=" in extra[index] else 1)
            yield Problem(
                EXTRA,
                f"{flag} {values[0]}: SGLang's {parameter} must be {says}; every request would fail",
                fix=f"set {list_override(EXTRA, [*extra[:index], *extra[end:]])}",
            )


@per_scope
def greedy_rollouts(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Rollouts at temperature 0 repeat one answer per prompt: a group baseline then cancels every reward
    (a filter that sets the advantages itself, tau2's rejection sampling, has no baseline)."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl" or cur.rollout_temperature != 0 or cur.n_samples_per_prompt == 1:
        return  # a group of one is refused by values.algorithm_meaningful
    estimator = cur.algorithm.advantage_estimator
    filtered = filter_declaration(cur.dynamic_sampling_filter) if cur.dynamic_sampling_filter else None
    if ESTIMATORS[estimator].group_baseline and not (filtered is not None and filtered.sets_advantages):
        key = scope.cur("rollout_temperature")
        yield Problem(
            key,
            f"rollout_temperature 0 is greedy: the {cur.n_samples_per_prompt} samples of each prompt are "
            f"one answer repeated, so {estimator}'s group baseline makes every advantage 0 and training "
            "never updates the policy",
            fix=f"set {key}=1.0",
        )


def greedy_eval_ignores_nucleus(ctx: Context) -> Iterator[Problem]:
    """An eval's top_p / top_k apply only when it samples (temperature > 0)."""
    for stage, config, overrides in eval_configs(ctx.run):
        if config.temperature > 0 or config.engine.name == "reference":
            continue
        for field, off in (("top_p", None), ("top_k", -1)):
            if getattr(config, field) != off:
                key = eval_key(stage, overrides, field)
                yield Problem(
                    key,
                    f"{field} {getattr(config, field)} has no effect: temperature 0 decodes greedily",
                    fix=f"set {eval_key(stage, overrides, 'temperature')}=1.0, or {key}="
                    + ("null" if off is None else str(off)),
                    severity="warning",
                )


RULES = (slime_sglang_flags, slime_sampling_flags, greedy_rollouts, greedy_eval_ignores_nucleus)
